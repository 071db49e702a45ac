"""An explicit `scale` argument is accepted but ignored; 1/sqrt(d_k) is always used.

Caught by SDPA-4: an explicit scale must be honoured, so scale=0.3 must differ from the
default.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "accepting a `scale` argument but never passing it on, so 1/sqrt(d_k) is always used"
CAUGHT_BY = "SDPA-4"


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None):
    return _base.attention_weights(q, k, mask, is_causal, bias=bias)   # BUG: `scale` dropped


_base.rewire(globals())
