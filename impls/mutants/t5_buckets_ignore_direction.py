"""Bidirectional T5 buckets that ignore the direction: keys after the query share buckets with keys before it.

Caught by PE-5: with bidirectional=True, half the buckets are for keys after the query
(n = j - i > 0) and half for keys at or before it; |n| alone makes the bias symmetric.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "bidirectional T5 buckets computed from |j - i| alone, without the upper half for keys after the query"
CAUGHT_BY = "PE-5"


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = np.asarray(relative_position).astype(np.int64)
    half = num_buckets // 2 if bidirectional else num_buckets
    r = np.abs(n) if bidirectional else np.maximum(-n, 0)   # BUG: no offset for n > 0
    exact = half // 2
    return np.where(r < exact, r, _log_bucket(r, exact, half, max_distance))


_base.rewire(globals())
