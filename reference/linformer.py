"""Linformer: attention through a low-rank projection of the length axis (lecture note 2 §5.1; Wang et al. 2020).

    Linformer(Q, K, V) = softmax(Q (E K)^T · scale) (F V)

    Q ∈ R^{L_q × d_k}, K ∈ R^{L × d_k}, V ∈ R^{L × d_v}
    E, F ∈ R^{k × L}   learned (here: random, N(0, 1/k)) projections of the L keys onto k rows

The scores are L_q × k instead of L_q × L: for a fixed k, time and memory grow as O(L)
(the lecture note's table). The approximation rests on the attention matrix having low rank;
with k = L and E = F = I nothing is projected away and it is exactly softmax attention
(claim EFF-5). E and F mix positions, so a causal or padding mask cannot be applied to
the projected keys: Linformer as published is for bidirectional encoders.
"""

import numpy as np

from reference.attention import scaled_dot_product_attention


# --8<-- [start:linformer]
def linformer_projections(rng: np.random.Generator, k: int, L: int) -> tuple[np.ndarray, np.ndarray]:
    """E, F ∈ R^{k × L} with entries N(0, 1/k): random stand-ins for the learned projections."""
    return rng.normal(0.0, 1.0 / np.sqrt(k), (k, L)), rng.normal(0.0, 1.0 / np.sqrt(k), (k, L))


def linformer_attention(q, k, v, e, f, scale=None):
    """softmax(Q (E K)^T · scale) (F V); q (..., L_q, d_k), k (..., L, d_k), v (..., L, d_v), e, f (k, L)."""
    k_proj = e @ k  # (k, L) @ (..., L, d_k) -> (..., k, d_k): k "summary keys"
    v_proj = f @ v  # (..., k, d_v)
    return scaled_dot_product_attention(q, k_proj, v_proj, scale=scale)  # (..., L_q, d_v), scores (..., L_q, k)
# --8<-- [end:linformer]
