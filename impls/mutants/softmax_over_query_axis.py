"""Softmax normalises over the query axis (-2) instead of the key axis (-1).

Caught by SDPA-2: each query's attention weights must sum to 1 over the keys; here the
columns sum to 1 and the rows do not.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "taking the softmax over the query axis (axis=-2) instead of over the keys (axis=-1)"
CAUGHT_BY = "SDPA-2"
ALSO_CAUGHT_BY = ("SDPA-3",)   # rows of weights do not sum to 1: not a convex combination


def _masked_softmax(scores, visible):
    axis = -2   # BUG: should be -1
    filled = np.where(visible, scores, -np.inf)
    row_max = filled.max(axis=axis, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0)
    e = np.where(visible, np.exp(filled - row_max), 0)
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total > 0, total, 1)


_base.rewire(globals())
