"""Rotary position embedding, RoPE (lecture note 2 §5.2; Su et al. 2021, RoFormer eq. 34).

    θ_i = base^(-2i / d),   i ∈ {0, ..., d/2 - 1}
    rope(x, m)[2i]   = x[2i] cos(m θ_i) - x[2i+1] sin(m θ_i)
    rope(x, m)[2i+1] = x[2i] sin(m θ_i) + x[2i+1] cos(m θ_i)

    x ∈ R^{... × L × d} with d even, m ∈ R^L the position of each row (usually 0, 1, ..., L-1)

Each interleaved pair (x[2i], x[2i+1]) is a point in the plane rotated by the angle
m θ_i: rope(x, m) = R(m) x with R(m) block-diagonal and orthogonal. So norms are kept,
position 0 is the identity, and because R(m)^T R(n) = R(n - m),

    <rope(q, m), rope(k, n)> = q^T R(n - m) k,

a function of the offset n - m alone: rotated queries and keys make the attention
scores relative (claim PE-4). RoPE is applied to q and k after the projections, not to v.

Layouts. This is the paper's interleaved layout (the contract's). LLaMA-style code
("rotate_half", GPT-NeoX) pairs feature i with feature i + d/2 instead. The two are the
same rotation with the features permuted: half_split_rope(x) = rope(x[..., P])[..., P^-1]
with P = `half_split_permutation(d)` = [0, d/2, 1, d/2 + 1, ...]; converting checkpoints
between the layouts permutes the columns of W^Q and W^K by P.
"""

import numpy as np

from reference.checks import check_rotary


# --8<-- [start:rotary_embedding]
def rotary_embedding(x, positions, base=10000.0):
    """Rotate each interleaved pair (x[2i], x[2i+1]) of row l by positions[l] * base^(-2i/d); (..., L, d) -> (..., L, d)."""
    positions = np.asarray(positions)
    check_rotary(x, positions)
    d = x.shape[-1]
    theta = float(base) ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # (d/2,): θ_i = base^(-2i/d)
    angle = positions.astype(np.float64)[..., None] * theta  # (..., L, d/2): m θ_i
    cos, sin = np.cos(angle).astype(x.dtype), np.sin(angle).astype(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., L, d/2) each: the pairs' two coordinates
    out = np.empty(np.broadcast_shapes(x.shape, angle.shape[:-1] + (d,)), dtype=x.dtype)
    out[..., 0::2] = even * cos - odd * sin  # x cos - y sin
    out[..., 1::2] = even * sin + odd * cos  # x sin + y cos
    return out
# --8<-- [end:rotary_embedding]


# --8<-- [start:half_split]
def half_split_permutation(d: int) -> np.ndarray:
    """P with rope_half_split(x) = rope(x[..., P])[..., argsort(P)]: P = [0, d/2, 1, d/2 + 1, ...]."""
    return np.stack([np.arange(d // 2), np.arange(d // 2) + d // 2], axis=-1).reshape(d)


def rotary_embedding_half_split(x, positions, base=10000.0):
    """LLaMA / GPT-NeoX layout: feature i pairs with i + d/2; x cos(mθ) + rotate_half(x) sin(mθ)."""
    positions = np.asarray(positions)
    check_rotary(x, positions)
    d = x.shape[-1]
    theta = float(base) ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # (d/2,)
    angle = positions.astype(np.float64)[..., None] * np.concatenate([theta, theta])  # (..., L, d)
    first, second = x[..., : d // 2], x[..., d // 2:]
    rotated_half = np.concatenate([-second, first], axis=-1)  # rotate_half(x) = [-x2, x1]
    return x * np.cos(angle).astype(x.dtype) + rotated_half * np.sin(angle).astype(x.dtype)
# --8<-- [end:half_split]
