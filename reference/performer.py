"""Performer: softmax attention by positive random features, FAVOR+ (lecture note 2 §5.1; Choromanski et al. 2021).

    exp(q · k) = E_ω[ φ_ω(q) φ_ω(k) ],   φ_ω(x) = exp(ω · x - |x|² / 2),   ω ~ N(0, I_d)

    With m features ω_1..ω_m (the columns of Ω ∈ R^{d × m}) and φ(x) = exp(x Ω - |x|²/2) / sqrt(m) ∈ R^m:
    Attention(Q, K, V)_i ≈ φ(q_i)^T (Σ_j φ(k_j) v_j^T) / φ(q_i)^T (Σ_j φ(k_j))

    q, k are first multiplied by sqrt(scale) (= d^(-1/4)), so that q · k is the scaled score.

Computed right to left, φ(K)^T V is m × d_v and no L × L matrix appears: time and memory
grow as O(L · m) (the lecture note's table). Each feature is positive, so the estimated weights
are positive and the denominator never vanishes (the "+" of FAVOR+). The estimate is
unbiased in numerator and denominator; its error falls like 1/sqrt(m) (claim EFF-5).
For numerical range, every exponent is shifted by a maximum: per query row for φ(q)
(the shift cancels between the numerator and denominator of that row) and one global
maximum for φ(K) (it cancels from every row alike).
"""

import math

import numpy as np


# --8<-- [start:performer]
def positive_random_features(x, omega, shift):
    """φ(x) = exp(x Ω - |x|²/2 - shift) / sqrt(m); x (..., L, d), Ω (d, m) -> (..., L, m), all > 0."""
    m = omega.shape[1]
    return np.exp(x @ omega - 0.5 * (x * x).sum(axis=-1, keepdims=True) - shift) / math.sqrt(m)


def performer_attention(q, k, v, omega, scale=None):
    """FAVOR+ estimate of softmax(Q K^T · scale) V with the m random features Ω (d_k, m); (..., L_q, d_v)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    q, k = q * math.sqrt(scale), k * math.sqrt(scale)  # so that q · k is the scaled score
    q_shift = (q @ omega).max(axis=-1, keepdims=True)  # (..., L_q, 1): cancels within each query's row
    k_shift = (k @ omega).max()  # one number: cancels from every row
    phi_q = positive_random_features(q, omega, q_shift)  # (..., L_q, m)
    phi_k = positive_random_features(k, omega, k_shift)  # (..., L, m)
    kv = np.swapaxes(phi_k, -1, -2) @ v  # (..., m, d_v): Σ_j φ(k_j) v_j^T, no L x L matrix
    z = phi_k.sum(axis=-2)  # (..., m): Σ_j φ(k_j)
    return (phi_q @ kv) / (phi_q @ z[..., None])  # (..., L_q, d_v) / (..., L_q, 1)
# --8<-- [end:performer]
