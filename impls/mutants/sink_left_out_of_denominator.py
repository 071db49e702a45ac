"""The sink is left out of the softmax's denominator: each row sums to 1 again, as if there were no sink.

Caught by SOFT-2: with a sink logit σ, P_ij = exp(S_ij - m) / (exp(σ - m) + sum_j' exp(S_ij' - m)),
so a row sums to less than 1. Here the sink only joins the row maximum, and the denominator
is the keys' sum alone: a plain softmax.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("leaving exp(sink) out of the softmax's denominator (the sink only joins the row maximum), so each "
       "row of weights sums to 1 as without a sink")
CAUGHT_BY = "SOFT-2"


def _masked_softmax_with_sink(scores, visible, sink):
    filled = np.where(visible, scores, -np.inf)
    row_max = np.maximum(filled.max(axis=-1, keepdims=True), sink)
    row_max = np.where(np.isfinite(row_max), row_max, 0)
    e = np.where(visible, np.exp(filled - row_max), 0)
    total = e.sum(axis=-1, keepdims=True)   # BUG: + exp(sink - row_max) is missing
    return e / np.where(total > 0, total, 1)


_base.rewire(globals())
