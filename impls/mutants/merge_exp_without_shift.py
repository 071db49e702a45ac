"""Two partial attention results are weighted with exp(lse_k) taken directly, instead of exp(lse_k - lse).

Caught by LSE-2: the weights exp(lse_1) / (exp(lse_1) + exp(lse_2)) are right in exact arithmetic, but
exp() overflows once an lse passes about 88 in float32 or 709 in float64 (scores that large are what
the log-sum-exp is kept for), and inf / inf is NaN. Subtracting the larger lse first (np.logaddexp)
keeps every exponent at or below 0.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("weighting two partial attention results by exp(lse_k) taken directly, exp(lse1) / (exp(lse1) + exp(lse2)), "
       "which overflows to inf / inf = NaN once an lse is large, instead of exp(lse_k - lse) with the larger lse "
       "subtracted first")
CAUGHT_BY = "LSE-2"


def merge_attention(out1, lse1, out2, lse2):
    out1, lse1, out2, lse2 = (np.asarray(x) for x in (out1, lse1, out2, lse2))
    if out1.shape != out2.shape or lse1.shape != lse2.shape or out1.shape[:-1] != lse1.shape:
        raise ValueError(f"partial results of mismatched shapes: out {out1.shape}, {out2.shape}; "
                         f"lse {lse1.shape}, {lse2.shape}")
    with np.errstate(over="ignore"):
        e1, e2 = np.exp(lse1), np.exp(lse2)  # BUG: overflows past lse ~ 709 (float64), ~ 88 (float32)
    total = e1 + e2
    lse = np.logaddexp(lse1, lse2)  # right: the bug is in the weights
    with np.errstate(over="ignore", invalid="ignore"):
        safe = np.where(total > 0, total, 1.0)
        out = (e1 / safe)[..., None] * out1 + (e2 / safe)[..., None] * out2
    return out, lse


_base.rewire(globals())
