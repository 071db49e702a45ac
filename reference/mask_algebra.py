"""Mask algebra: local windows, packed documents, prefix-LM, and how masks compose (CONTRACT.md, "Mask algebra").

    window (left, right):   query i sees key j  iff  -left <= j - (i + L_k - L_q) <= right
    documents:              query i sees key j  iff  q_segment_ids[i] == kv_segment_ids[j]
    prefix-LM, prefix n:    query i sees key j  iff  j < n  or  j <= i                (L_q == L_k == L)
    composition:            visible = mask AND causal AND window AND documents

A window is centred on the query's own position, i + (L_k - L_q): the L_q queries are the last
L_q of the L_k positions, the bottom-right alignment of `causal_mask` (FlashAttention's
`window_size=(left, right)`). `left` keys back and `right` keys ahead; None on a side means no
limit there, so window_size=(w, 0) is causal local attention and (None, 0) is plain causal.

Packed documents put several sequences in one row; a key is visible only to queries of its own
document, a block-diagonal mask (the segment ids of JAX's splash attention and FlexAttention's
document mask). Prefix-LM (T5's and UniLM's) sees the whole prefix both ways and the rest
causally: it is an OR of two masks, so it is passed as an explicit `mask=`, never built from
`is_causal`, which composes by AND.
"""

from __future__ import annotations

import numbers

import numpy as np

from reference.masks import visible


# --8<-- [start:window_mask]
def window_mask(L_q: int, L_k: int, window_size) -> np.ndarray:
    """M[i, j] = -left <= j - (i + L_k - L_q) <= right, bottom-right aligned; (L_q, L_k) bool."""
    left, right = check_window_size(window_size)
    i = np.arange(L_q)[:, None] + (L_k - L_q)  # (L_q, 1): each query's own position among the keys
    j = np.arange(L_k)[None, :]  # (1, L_k)
    after_start = np.ones((L_q, L_k), dtype=bool) if left is None else j >= i - left
    before_end = np.ones((L_q, L_k), dtype=bool) if right is None else j <= i + right
    return after_start & before_end
# --8<-- [end:window_mask]


# --8<-- [start:document_mask]
def document_mask(q_segment_ids, kv_segment_ids) -> np.ndarray:
    """M[..., i, j] = (q_segment_ids[..., i] == kv_segment_ids[..., j]); (..., L_q, L_k) bool."""
    q_seg = np.asarray(q_segment_ids)[..., :, None]  # (..., L_q, 1)
    kv_seg = np.asarray(kv_segment_ids)[..., None, :]  # (..., 1, L_k)
    return q_seg == kv_seg
# --8<-- [end:document_mask]


# --8<-- [start:segment_ids_from_lengths]
def segment_ids_from_lengths(lengths) -> np.ndarray:
    """Documents of `lengths` packed one after another: [0]*n_0 + [1]*n_1 + ...; (sum(lengths),) int."""
    return np.repeat(np.arange(len(lengths)), lengths)
# --8<-- [end:segment_ids_from_lengths]


# --8<-- [start:prefix_lm_mask]
def prefix_lm_mask(L: int, prefix_length: int) -> np.ndarray:
    """M[i, j] = j < prefix_length or j <= i: the prefix both ways, the rest causal; (L, L) bool."""
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    return (j < prefix_length) | (j <= i)  # an OR: no `is_causal` (which ANDs) can express it
# --8<-- [end:prefix_lm_mask]


# --8<-- [start:visible_keys]
def visible_keys(mask, is_causal: bool, L_q: int, L_k: int, window_size=None, q_segment_ids=None,
                 kv_segment_ids=None) -> np.ndarray:
    """mask AND causal AND window AND documents, broadcastable to (..., L_q, L_k), bool."""
    allowed = visible(mask, is_causal, L_q, L_k)  # (..., L_q, L_k): mask AND causal
    if window_size is not None:
        allowed = allowed & window_mask(L_q, L_k, window_size)
    if q_segment_ids is not None or kv_segment_ids is not None:
        q_seg, kv_seg = segment_ids(q_segment_ids, kv_segment_ids, L_q, L_k)
        allowed = allowed & document_mask(q_seg, kv_seg)
    return allowed
# --8<-- [end:visible_keys]


def check_window_size(window_size) -> tuple[int | None, int | None]:
    """(left, right), each an int >= 0 or None (no limit on that side); ValueError naming the value otherwise."""
    try:
        left, right = window_size
    except (TypeError, ValueError):
        raise ValueError(f"window_size must be a pair (left, right), got {window_size!r}") from None
    for side, w in (("left", left), ("right", right)):
        if w is None:
            continue
        if isinstance(w, bool) or not isinstance(w, numbers.Integral):
            raise ValueError(f"window_size's {side} extent must be an int >= 0 or None, got {w!r}")
        if w < 0:
            raise ValueError(f"window_size's {side} extent must be >= 0 or None (no limit), got {w}: "
                             "FlashAttention's -1 for 'no limit' is None here")
    return (None if left is None else int(left)), (None if right is None else int(right))


def segment_ids(q_segment_ids, kv_segment_ids, L_q: int, L_k: int) -> tuple[np.ndarray, np.ndarray]:
    """Both segment-id arrays, (..., L_q) and (..., L_k) ints; one given alone serves both when L_q == L_k."""
    if kv_segment_ids is None:
        kv_segment_ids = q_segment_ids
    if q_segment_ids is None:
        q_segment_ids = kv_segment_ids
    q_seg, kv_seg = np.asarray(q_segment_ids), np.asarray(kv_segment_ids)
    for name, ids, L in (("q_segment_ids", q_seg, L_q), ("kv_segment_ids", kv_seg, L_k)):
        if ids.ndim < 1 or ids.shape[-1] != L:
            raise ValueError(f"{name} must have shape (..., {L}), one id per position, got shape {ids.shape}")
        if not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"{name} must hold integers (one document id per position), got dtype {ids.dtype}")
    return q_seg, kv_seg
