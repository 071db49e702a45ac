"""The default scale is a NumPy float64 scalar, which promotes float32 attention to float64.

Caught by ERR-2: outputs must keep the input's dtype; 1 / np.sqrt(d_k) is np.float64, and
since NumPy 2 (NEP 50) float32_array * np.float64 is a float64 array.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("computing the scale as 1 / np.sqrt(d_k), a NumPy float64 scalar, which silently "
       "turns float32 scores (and the output) into float64")
CAUGHT_BY = "ERR-2"


def _default_scale(d_k):
    return 1 / np.sqrt(d_k)   # BUG: np.float64, not a Python float


_base.rewire(globals())
