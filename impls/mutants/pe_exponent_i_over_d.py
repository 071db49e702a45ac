"""The sinusoidal frequencies use the exponent i/D instead of 2i/D.

Caught by PE-1: pe[p, 2i] must be sin(p / 10000^(2i/D)); with i/D every pair but the first
rotates too fast (the wavelengths stop at 10000^(1/2) instead of reaching 10000).
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "using 10000^(i/D), with i the pair index, instead of 10000^(2i/D) for the frequency of pair i"
CAUGHT_BY = "PE-1"


def _angles(length, d_model):
    position = np.arange(length, dtype=np.float64)[:, None]
    i = np.arange((d_model + 1) // 2, dtype=np.float64)
    return position / 10000.0 ** (i / d_model)   # BUG: i/D, should be 2i/D


_base.rewire(globals())
