"""The sinusoidal encoding stores the angles themselves in the even columns, forgetting the sine.

Caught by PE-2: every value of the encoding lies in [-1, 1]; the angle p / 10000^(2i/D) in column 0
is the position p itself, which passes 1 from position 2 on.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _angles, _require_int

BUG = "storing the angle p / 10000^(2i/D) in the even columns without taking its sine"
CAUGHT_BY = "PE-2"


def sinusoidal_positional_encoding(length, d_model):
    length = _require_int("length", length, 0)
    d_model = _require_int("d_model", d_model, 1)
    angle = _angles(length, d_model)
    pe = np.zeros((length, d_model))
    pe[:, 0::2] = angle                               # BUG: np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe


_base.rewire(globals())
