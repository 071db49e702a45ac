"""Grouped-query and multi-query attention (lecture note 1, closing paragraph; Ainslie et al. 2023, Shazeer 2019).

    G = num_kv_heads, a divisor of H;  query heads come in G groups of H / G consecutive heads
    head_h = Attention(Q W_h^Q, K W_{g(h)}^K, V W_{g(h)}^V),   g(h) = h // (H / G)

    W^Q, W^O ∈ R^{D × D}  as in multi-head attention
    W^K, W^V ∈ R^{D × G·d_k}   G key/value heads instead of H,  d_k = D / H

G = H is multi-head attention; G = 1 is multi-query attention (every query head shares
one K/V head). Consecutive query heads share a K/V head, as in PyTorch's
`scaled_dot_product_attention(..., enable_gqa=True)` and ONNX Attention: repeating each
K/V head H / G times turns GQA back into MHA with tied K/V weights (claim MHA-9). The
K/V projections hold H / G times fewer parameters, and a decoder's K/V cache
(`reference.kv_cache`) H / G times fewer numbers per token.
"""

import numpy as np


# --8<-- [start:repeat_kv_heads]
def repeat_kv_heads(x, num_heads: int):
    """(..., G, L, d) -> (..., H, L, d): K/V head g serves query heads g·H/G .. (g+1)·H/G - 1."""
    G = x.shape[-3]
    return np.repeat(x, num_heads // G, axis=-3)  # [k0, k0, k1, k1] for H = 4, G = 2: consecutive heads share
# --8<-- [end:repeat_kv_heads]
