"""Splitting features into heads and concatenating them back (lecture note 1 §3, lecture note 2 §1.1, §1.3).

    split:  X ∈ R^{L × D}  ->  (X_1, ..., X_H),  X_h = X[:, h·d_k : (h+1)·d_k] ∈ R^{L × d_k},  d_k = D / H
    merge:  Concat(head_1, ..., head_H) ∈ R^{L × H·d_k}, concatenated along the feature axis

Concatenation is along the features, never along L (lecture note 1, pitfalls). The
reshape alone would interleave positions and heads; the transpose is what puts
the head axis in front of L.
"""

import numpy as np

from reference.checks import check_num_heads


# --8<-- [start:split_heads]
def split_heads(x, num_heads: int):
    """(..., L, D) -> (..., H, L, D/H): head h gets features h*d_k:(h+1)*d_k."""
    *lead, L, D = x.shape
    d_k = check_num_heads(D, num_heads)
    x = x.reshape(*lead, L, num_heads, d_k)  # (..., L, H, d_k)
    return np.swapaxes(x, -3, -2)  # (..., H, L, d_k)
# --8<-- [end:split_heads]


# --8<-- [start:merge_heads]
def merge_heads(heads):
    """(..., H, L, d) -> (..., L, H*d): out[..., l, h*d:(h+1)*d] = heads[..., h, l, :]."""
    *lead, H, L, d = heads.shape
    x = np.swapaxes(heads, -3, -2)  # (..., L, H, d)
    return x.reshape(*lead, L, H * d)  # (..., L, H*d)
# --8<-- [end:merge_heads]
