"""The attention scores are stored in float32 (`scores.astype(np.float32)`) inside a float64 call.

An outsider's NumPy attention that keeps its score matrix in float32 "to save memory" and reads it back
into the float64 softmax: every later step is float64, so the output is a float64 array whose values are
not float32 values, but its weights carry the scores' float32 rounding and are right to about 7 digits. Caught by PREC-3 (a float64 call whose
error only a float32 step explains); the other claims judge it at float32 precision, once PREC-3 has
charged it.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "casting the attention scores Q K^T / sqrt(d_k) to float32 inside a float64 call"
CAUGHT_BY = "PREC-3"


def _scores(q, k, scale):
    scores = np.matmul(q, np.swapaxes(k, -1, -2)) * scale  # (..., L_q, L_k)
    return scores.astype(np.float32).astype(scores.dtype)  # BUG: float64 scores stored in float32


_base.rewire(globals())
