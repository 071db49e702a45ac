"""LayerNorm's mean and variance are computed in float32 (`x.float().mean()`, `x.float().var()`), float64 input included.

Two public LayerNorms do this ("statistics in float32, as the kernels do"): right for float16, but a float64
call then normalises with float32 statistics and is right to about 7 digits. Caught by PREC-3; the other
claims judge it at float32 precision.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "computing LayerNorm's mean and variance in float32, float64 input included"
CAUGHT_BY = "PREC-3"


def _moments(x):
    x32 = x.astype(np.float32)  # BUG: the statistics of a float64 row in float32
    mean = x32.mean(axis=-1, keepdims=True)
    var = ((x32 - mean) ** 2).mean(axis=-1, keepdims=True)
    return mean, var


_base.rewire(globals())
