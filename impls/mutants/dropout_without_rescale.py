"""Dropout that zeroes weights but forgets to scale the kept ones by 1 / (1 - p).

Caught by DROP-2: each weight is kept with probability 1 - p and scaled by 1 / (1 - p), so that
E[P'] = P. Without the scale every row sums to 1 - p on average and the output shrinks by the
same factor: training sees smaller activations than evaluation.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _check_dropout_p

BUG = ("dropping weights without scaling the kept ones by 1 / (1 - p), so each row sums to 1 - p on average "
       "and the output is biased towards 0")
CAUGHT_BY = "DROP-2"


def _dropout(p, dropout_p, generator):
    dropout_p = _check_dropout_p(dropout_p)
    if dropout_p == 0:
        return p
    rng = np.random.default_rng() if generator is None else generator
    keep = rng.random(p.shape) >= dropout_p
    return np.where(keep, p, 0).astype(p.dtype, copy=False)   # BUG: no / (1 - dropout_p)


_base.rewire(globals())
