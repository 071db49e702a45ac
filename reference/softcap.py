"""Softcapping of attention scores (Gemma 2, Team Gemma 2024; FlashAttention's and ONNX Attention's `softcap`).

    softcap(S) = cap · tanh(S / cap),          cap > 0

    S ∈ R^{L_q × L_k}   the scaled scores Q K^T · scale
    the result lies in (-cap, cap): large scores are squashed, small ones barely move
      (tanh(x) ≈ x near 0, so softcap(S) → S as cap → ∞)

The cap is applied to the scaled scores *before* the mask: a hidden key is hidden after the cap
as before it. Capping after the mask turns a hidden key's -inf into -cap, a finite score, and the
key gets a weight. An additive position bias joins after the cap (FlashAttention's order).
"""

import numbers

import numpy as np


# --8<-- [start:softcap]
def softcap(scores: np.ndarray, cap: float) -> np.ndarray:
    """cap · tanh(scores / cap), elementwise; same shape as scores."""
    return cap * np.tanh(scores / cap)
# --8<-- [end:softcap]


def check_softcap(cap) -> float:
    """A softcap is a finite number > 0; ValueError naming it otherwise."""
    if isinstance(cap, bool) or not isinstance(cap, numbers.Real) or not np.isfinite(cap) or cap <= 0:
        raise ValueError(f"softcap must be a finite number > 0 (None: no cap), got {cap!r}")
    return float(cap)
