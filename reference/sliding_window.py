"""Sliding-window attention with global tokens, Longformer's pattern (lecture note 2 §5.1; Beltagy et al. 2020).

    query i sees key j  iff  |i - j| <= w   or  i ∈ G  or  j ∈ G

    w ∈ N the one-sided window: each ordinary token sees its 2w + 1 neighbours
    G ⊂ {0, ..., L-1} the global tokens (a [CLS] token, a question): they see every key,
      and every query sees them

The result is exactly naive attention under `band_mask(L, w, G)` (claim EFF-4); the point
is the cost. Naive attention builds the L × L scores and masks most of them away;
here an ordinary query only ever scores its 2w + 1 window keys and the |G| global keys,
so time and memory are O(L · (w + |G|)) for the ordinary rows plus O(|G| · L) for the
global rows: linear in L for a fixed window.
"""

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from reference.attention import masked_softmax, scaled_dot_product_attention


# --8<-- [start:band_mask]
def band_mask(L: int, window: int, global_tokens=()) -> np.ndarray:
    """M[i, j] = |i - j| <= window or i or j global; (L, L) bool, for naive attention's mask=."""
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    is_global = np.zeros(L, dtype=bool)
    is_global[list(global_tokens)] = True
    return (np.abs(i - j) <= window) | is_global[:, None] | is_global[None, :]
# --8<-- [end:band_mask]


# --8<-- [start:sliding_window_attention]
def sliding_window_attention(q, k, v, window: int, global_tokens=(), scale=None):
    """Self-attention under band_mask(L, window, global_tokens) at O(L·w) cost; q, k (..., L, d_k), v (..., L, d_v)."""
    L, d_k = q.shape[-2:]
    w = window
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    g = np.asarray(sorted(set(global_tokens)), dtype=np.int64)  # (n_g,)
    is_global = np.zeros(L, dtype=bool)
    is_global[g] = True
    # 1) each query's 2w+1 window keys: a strided view of the zero-padded keys, no L x L array
    pad = [(0, 0)] * (q.ndim - 2) + [(w, w), (0, 0)]
    k_win = sliding_window_view(np.pad(k, pad), 2 * w + 1, axis=-2)  # (..., L, d_k, 2w+1)
    v_win = sliding_window_view(np.pad(v, pad), 2 * w + 1, axis=-2)  # (..., L, d_v, 2w+1)
    j = np.arange(L)[:, None] + np.arange(-w, w + 1)[None, :]  # (L, 2w+1): key index of each window slot
    in_range = (j >= 0) & (j < L)
    local_ok = in_range & ~is_global[np.clip(j, 0, L - 1)]  # a global key is scored once, in its own column
    local = (q[..., :, None, :] @ k_win)[..., 0, :] * scale  # (..., L, 1, d_k) @ (..., L, d_k, 2w+1) -> (..., L, 2w+1)
    # 2) every query also scores the global keys
    k_g, v_g = k[..., g, :], v[..., g, :]  # (..., n_g, d)
    glob = (q @ np.swapaxes(k_g, -1, -2)) * scale  # (..., L, n_g)
    # 3) one softmax over window + global columns: (..., L, 2w+1+n_g)
    allowed = np.concatenate([local_ok, np.ones((L, len(g)), dtype=bool)], axis=-1)
    p = masked_softmax(np.concatenate([local, glob], axis=-1), allowed)
    p_local, p_glob = p[..., : 2 * w + 1], p[..., 2 * w + 1:]
    out = (v_win @ p_local[..., :, :, None])[..., 0] + p_glob @ v_g  # (..., L, d_v)
    # 4) the global queries see every key: |G| dense rows
    out[..., g, :] = scaled_dot_product_attention(q[..., g, :], k, v, scale=scale)
    return out
# --8<-- [end:sliding_window_attention]
