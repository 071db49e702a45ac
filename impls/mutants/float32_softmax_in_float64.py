"""The softmax is computed in float32 and cast back (`softmax(scores.astype(np.float32)).astype(q.dtype)`).

The way JAX and x-transformers code often reads ("softmax in float32 for stability"), applied to float64
input: the scores and the product with V are float64, the weights in between are float32, so a float64
call is right to about 7 digits. Caught by PREC-3; every other claim judges it at float32 precision.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "computing the softmax in float32 and casting the weights back, inside a float64 call"
CAUGHT_BY = "PREC-3"


def _masked_softmax(scores, visible):
    s = np.where(visible, scores, -np.inf).astype(np.float32)  # BUG: the softmax runs in float32
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)  # (..., L_q, 1); -inf for a row of no keys
    m = np.where(np.isfinite(m), m, np.float32(0))
    e = np.where(visible, np.exp(s - m), np.float32(0))
    total = e.sum(axis=-1, keepdims=True)
    p = e / np.where(total > 0, total, np.float32(1))
    return p.astype(scores.dtype)


_base.rewire(globals())
