"""scaled_dot_product_attention accepts bias= and drops it.

Caught by PE-5: T5's and ALiBi's relative position biases reach attention only through this
additive bias; an implementation that takes the keyword and ignores it attends as if there
were no positions.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "the additive bias= accepted by attention and silently ignored"
CAUGHT_BY = "PE-5"


def _add_bias(scores, bias, shape):
    return scores   # BUG: the bias never reaches the scores


_base.rewire(globals())
