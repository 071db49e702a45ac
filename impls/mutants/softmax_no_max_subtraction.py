"""The softmax exponentiates the raw scores, without subtracting the maximum first.

Caught by SDPA-5: scores of magnitude 1e4 in float32 must give finite, correct outputs; here
exp overflows to inf and inf / inf gives NaN.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "computing exp(scores) / sum(exp(scores)) without first subtracting the row maximum, which overflows for large scores"
CAUGHT_BY = "SDPA-5"


def _masked_softmax(scores, visible):
    e = np.where(visible, np.exp(scores), 0)   # BUG: no max subtraction
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1)


_base.rewire(globals())
