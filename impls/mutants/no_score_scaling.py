"""The default scale is 1 instead of 1/sqrt(d_k): the scores are not scaled at all.

Caught by SDPA-4: the default scale must be 1/sqrt(d_k), which keeps the scores' variance
near 1 for every d_k; unscaled scores have variance d_k.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "forgetting the 1/sqrt(d_k) scaling: softmax(Q K^T) V instead of softmax(Q K^T / sqrt(d_k)) V"
CAUGHT_BY = "SDPA-4"
ALSO_CAUGHT_BY = ("SDPA-1",)   # the values differ from softmax(QK^T/sqrt(d_k)) V too


def _default_scale(d_k):
    return 1.0   # BUG: should be 1 / sqrt(d_k)


_base.rewire(globals())
