"""The log-sum-exp is computed as log(sum(exp(S))), without subtracting the row maximum: it overflows.

Caught by LSE-1: lse_i = m_i + log sum_j exp(S_ij - m_i) is finite whenever a key is visible;
exp(S_ij) alone is inf beyond S = 709 in float64 (88 in float32), and the lse with it.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("computing the log-sum-exp as log(sum(exp(S))) without the row maximum, which overflows to inf for "
       "scores beyond 88 in float32 or 709 in float64")
CAUGHT_BY = "LSE-1"


def _log_sum_exp(scores, visible, sink=None):
    with np.errstate(over="ignore", divide="ignore"):
        total = np.where(visible, np.exp(scores), 0).sum(axis=-1)   # BUG: no row maximum subtracted
        if sink is not None:
            total = total + np.exp(sink[..., 0])
        return np.log(total)


_base.rewire(globals())
