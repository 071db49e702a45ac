"""A chunked (online-softmax) attention that stops streaming key blocks one block early under is_causal.

An outsider's tiled kernel: for the query block [i0, i1) the keys it may see end at i1 - 1 + (L_k - L_q),
but the loop runs `for j0 in range(0, i0 + offset, block_k)`, so the block holding the diagonal never
comes. The rows of the first block see nothing (their output is 0) and every other row loses its nearest
keys. Caught by MASK-2 (causal attention against the reference).
"""
import math

import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _batch_shape, _broadcast_mask, _check_lengths, _check_qk

BUG = "the causal key-block loop ends at the query block's first row (i0) instead of its last (i1 - 1)"
CAUGHT_BY = "MASK-2"
BLOCK = 16  # queries and keys per tile


def _tile(q, k, v, scale, visible, i0, i1, offset, is_causal):
    """Rows [i0, i1) of softmax(Q K^T * scale) V, the key blocks streamed with a running max and sum."""
    L_k = k.shape[-2]
    m = np.full(q.shape[:-2] + (i1 - i0, 1), -np.inf, dtype=v.dtype)  # running row max
    l = np.zeros_like(m)  # running sum of exp(s - m)
    acc = np.zeros(q.shape[:-2] + (i1 - i0, v.shape[-1]), dtype=v.dtype)
    end = min(L_k, i0 + offset) if is_causal else L_k  # BUG: i1 + offset is where the visible keys end
    for j0 in range(0, end, BLOCK):
        j1 = min(j0 + BLOCK, L_k)
        s = (q[..., i0:i1, :] @ np.swapaxes(k[..., j0:j1, :], -1, -2)) * scale  # (..., bq, bk)
        s = np.where(visible[..., i0:i1, j0:j1], s, -np.inf)
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        safe = np.where(np.isfinite(m_new), m_new, 0.0)
        e = np.where(np.isfinite(s), np.exp(s - safe), 0.0)
        shrink = np.where(np.isfinite(m), np.exp(m - safe), 0.0)
        l = l * shrink + e.sum(axis=-1, keepdims=True)
        acc = acc * shrink + e @ v[..., j0:j1, :]
        m = m_new
    return np.where(l > 0, acc / np.where(l > 0, l, 1.0), 0.0).astype(v.dtype)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, return_lse=False,
                                 dropout_p=0.0, generator=None):
    if any(x is not None for x in (bias, window_size, q_segment_ids, kv_segment_ids, softcap, sinks)) or return_lse \
            or dropout_p:
        raise NotImplementedError("the chunked kernel takes mask, is_causal and scale only")
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    _check_qk(q, k)
    _check_lengths(k, v)
    lead = _batch_shape(q=q, k=k, v=v)
    L_q, L_k = q.shape[-2], k.shape[-2]
    q, k, v = (np.broadcast_to(x, lead + x.shape[-2:]) for x in (q, k, v))
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    visible = np.ones(lead + (L_q, L_k), dtype=bool)
    if mask is not None:
        _broadcast_mask(mask, np.shape(mask)[:-2] + (L_q, L_k))  # boolean, and its last two axes fit
        lead = np.broadcast_shapes(lead, np.shape(mask)[:-2])
        visible = _broadcast_mask(mask, lead + (L_q, L_k))
        q, k, v = (np.broadcast_to(x, lead + x.shape[-2:]) for x in (q, k, v))
    if is_causal:
        visible = visible & (np.arange(L_k)[None, :] <= np.arange(L_q)[:, None] + (L_k - L_q))
    rows = [_tile(q, k, v, scale, visible, i0, min(i0 + BLOCK, L_q), L_k - L_q, is_causal)
            for i0 in range(0, L_q, BLOCK)]
    return np.concatenate(rows, axis=-2) if rows else np.zeros(lead + (0, v.shape[-1]), dtype=v.dtype)


_base.rewire(globals())
