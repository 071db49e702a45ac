"""Attention dropout (Vaswani et al. 2017 §5.4; Srivastava et al. 2014): drop weights, keep the mean.

    M_ij ~ Bernoulli(1 - p)                 each weight kept with probability 1 - p, independently
    P'_ij = P_ij · M_ij / (1 - p)           the kept ones scaled so that E[P'] = P
    out   = P' V                            E[out] = P V: the output is unbiased

    P  (..., L_q, L_k)   the attention weights after the softmax (and the mask)
    M  (..., L_q, L_k)   one draw per weight, per batch element and head: patterns independent across heads

Dropout acts on the weights after the softmax, never on the scores (a dropped score would still get
weight after renormalisation). p = 0 is the identity, and 0 <= p < 1 (p = 1 would divide by 0). In
evaluation there is no dropout at all: `multi_head_attention(..., training=False)` ignores dropout_p.
The draws come from the generator the caller passes (`np.random.Generator` here), so the same
generator state gives the same pattern.
"""

import numbers

import numpy as np


# --8<-- [start:check_dropout_p]
def check_dropout_p(dropout_p) -> float:
    """0 <= dropout_p < 1, a real number; anything else is a ValueError naming it."""
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real) or not 0 <= dropout_p < 1:
        raise ValueError(f"dropout_p must be a number with 0 <= dropout_p < 1, got {dropout_p!r}")
    return float(dropout_p)
# --8<-- [end:check_dropout_p]


# --8<-- [start:dropout]
def dropout(p: np.ndarray, dropout_p: float, generator: np.random.Generator | None = None) -> np.ndarray:
    """P' = P · M / (1 - p) with M_ij ~ Bernoulli(1 - p), drawn from `generator`; P itself when p = 0."""
    dropout_p = check_dropout_p(dropout_p)
    if dropout_p == 0:
        return p
    rng = np.random.default_rng() if generator is None else generator
    keep = rng.random(p.shape) >= dropout_p  # (..., L_q, L_k): True with probability 1 - p
    return np.where(keep, p / (1 - dropout_p), 0.0).astype(p.dtype, copy=False)  # (..., L_q, L_k)
# --8<-- [end:dropout]
