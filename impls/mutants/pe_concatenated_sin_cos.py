"""The sinusoidal encoding puts all sines first and all cosines after, [sin | cos].

Caught by PE-1: the formula interleaves them, pe[p, 2i] = sin and pe[p, 2i+1] = cos, so
pe[0] must be [0, 1, 0, 1, ...]; here it is [0, ..., 0, 1, ..., 1].
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _angles, _require_int

BUG = "concatenating [sin | cos] along the features (as some libraries do) instead of interleaving sin, cos, sin, cos"
CAUGHT_BY = "PE-1"


def sinusoidal_positional_encoding(length, d_model):
    length = _require_int("length", length, 0)
    d_model = _require_int("d_model", d_model, 1)
    angle = _angles(length, d_model)
    half = angle.shape[1]
    pe = np.zeros((length, d_model))
    pe[:, :half] = np.sin(angle)                          # BUG: first half sin,
    pe[:, half:] = np.cos(angle[:, : d_model - half])     # second half cos
    return pe


_base.rewire(globals())
