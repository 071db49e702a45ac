"""Rotary embedding that computes the angles m·θ_i in float32, whatever the input's dtype.

As Hugging Face's LLaMA does (its rotary embedding casts the positions and frequencies to float32): right
for float32 input, whose rule allows an angle rounded to float32 (tolerance.rope_angle_size), but a float64
call then carries float32's error in every rotated value. The contract computes float64 input in float64
throughout, so this is a float32 step inside a float64 call: caught by PREC-3, which charges it once;
PE-4 judges it at float32 precision and says so.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "rotary angles m * base^(-2i/d) computed in float32, with the positions and frequencies rounded"
CAUGHT_BY = "PREC-3"


def _rotary_angles(positions, d, base):
    inv_freq = (1.0 / float(base) ** (np.arange(d // 2) * 2.0 / d)).astype(np.float32)
    return np.asarray(positions).astype(np.float32)[..., None] * inv_freq   # BUG: float32 angles


_base.rewire(globals())
