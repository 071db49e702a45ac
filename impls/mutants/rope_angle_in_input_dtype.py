"""Rotary embedding that computes the angles m·θ_i in the input's dtype, float32 here.

Caught by PE-4: an angle of a few hundred radians rounded to float32 is off by ~1e-5, and
so is every rotated value; the rule of CONTRACT.md allows errors of the size the naive float32
code makes, whose angles are exact. (In float16 the angle would be off by a whole radian.)
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "rotary angles m * base^(-2i/d) computed in float32, with the positions and frequencies rounded"
CAUGHT_BY = "PE-4"


def _rotary_angles(positions, d, base):
    inv_freq = (1.0 / float(base) ** (np.arange(d // 2) * 2.0 / d)).astype(np.float32)
    return np.asarray(positions).astype(np.float32)[..., None] * inv_freq   # BUG: float32 angles


_base.rewire(globals())
