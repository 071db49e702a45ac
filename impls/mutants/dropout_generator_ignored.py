"""Dropout drawn from a fresh generator of its own instead of the caller's: no call can be replayed.

Caught by DROP-1: the draws come from the generator the caller passes, so generators in the same
state give the same result, bit for bit. Here a new, unseeded `np.random.default_rng()` is made on
every call and the caller's generator is ignored, so two calls with equal generators drop different
weights (and a training step cannot be reproduced).
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _check_dropout_p

BUG = ("drawing the dropout pattern from a fresh generator of its own on every call and ignoring the caller's "
       "`generator`, so equal generator states give different results")
CAUGHT_BY = "DROP-1"
ALSO_CAUGHT_BY = ("DROP-2", "DROP-3")


def _dropout(p, dropout_p, generator):
    dropout_p = _check_dropout_p(dropout_p)
    if dropout_p == 0:
        return p
    rng = np.random.default_rng()   # BUG: the caller's generator is never used
    keep = rng.random(p.shape) >= dropout_p
    return np.where(keep, p / (1 - dropout_p), 0).astype(p.dtype, copy=False)


_base.rewire(globals())
