"""The sinusoidal encoding puts cos in the even columns and sin in the odd ones.

Caught by PE-1: pe[p, 2i] must be the sine and pe[p, 2i+1] the cosine, so pe[0] is
[0, 1, 0, 1, ...]; here it is [1, 0, 1, 0, ...].
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _angles, _require_int

BUG = "swapping sin and cos: cos in the even columns 2i and sin in the odd columns 2i+1"
CAUGHT_BY = "PE-1"
ALSO_CAUGHT_BY = ("PE-3",)   # cos/sin pairs swapped: pe[p + k] is not the rotation of pe[p]


def sinusoidal_positional_encoding(length, d_model):
    length = _require_int("length", length, 0)
    d_model = _require_int("d_model", d_model, 1)
    angle = _angles(length, d_model)
    pe = np.zeros((length, d_model))
    pe[:, 0::2] = np.cos(angle)                       # BUG: cos first
    pe[:, 1::2] = np.sin(angle[:, : d_model // 2])
    return pe


_base.rewire(globals())
