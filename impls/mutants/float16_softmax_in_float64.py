"""The softmax of a float64 call runs in float16 and its weights are cast back
(`np.exp((scores - m).astype(np.float16))`, summed and divided in float16).

An outsider's "memory saving" for the weights matrix, the largest array of attention: the weights are
probabilities, so three digits "are plenty". The row maximum is taken in float64 first (so no exp()
overflows), the scores and the product with V are float64, only the weights in between are float16: a float64
call is right to about 3 digits. float32 input is left as it is. Caught by PREC-3, which finds the float16
step and charges it once; every other claim judges it at float16 precision and says so.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "computing the softmax of a float64 call in float16 and casting the weights back"
CAUGHT_BY = "PREC-3"


def _masked_softmax(scores, visible):
    s = np.where(visible, scores, -np.inf)
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)  # (..., L_q, 1); -inf for a row of no keys
    m = np.where(np.isfinite(m), m, 0.0)
    low = np.float16 if scores.dtype == np.float64 else scores.dtype.type
    shifted = np.where(visible, s - m, 0.0).astype(low)  # BUG: a float64 call's weights in float16
    e = np.where(visible, np.exp(shifted), low(0))
    total = e.sum(axis=-1, keepdims=True)
    p = e / np.where(total > 0, total, low(1))
    return p.astype(scores.dtype)


_base.rewire(globals())
