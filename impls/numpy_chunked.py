"""Exact attention by online softmax, in NumPy: never an L_q x L_k matrix (seed 001 §4.1); follows DESIGN.md.

"Split the big matrix into small blocks" (seed 001 §4.1), done so that the result is
exact, not approximate: FlashAttention's online softmax (Milakov & Gimelshein 2018;
Dao et al. 2022). For one block of queries, the keys stream past in blocks, and each
query row keeps three running quantities:

    m  = max of the scores seen so far                           (the row's running maximum)
    l  = sum_j exp(s_j - m) over the keys seen so far           (the running normaliser)
    a  = sum_j exp(s_j - m) v_j over the keys seen so far       (the running, unnormalised output)

A new block of scores S_b (one row of it: s_b) updates them as

    m' = max(m, max(s_b))
    l' = exp(m - m') l + sum exp(s_b - m')
    a' = exp(m - m') a + exp(s_b - m') V_b

and after the last block the output row is a / l: the same softmax(S) V as the naive
path, with every exponential taken of a number <= 0. Memory per query block is
O(block_q * block_k + block_q * d_v), so the peak grows as O(L), not O(L^2) (claim EFF-2).

Contract rules, as in the naive path: a hidden key's score is -inf, so its weight is
exactly 0; a row with no visible key keeps l = 0 and a = 0 and outputs exactly 0; with
`is_causal` (bottom-right aligned) the key blocks wholly above the diagonal are never
computed, and fully masked blocks are skipped.

Block sizes: `scaled_dot_product_attention`, `attention_weights` and
`multi_head_attention` take `block_q` and `block_k` (any size >= 1; None means the
defaults BLOCK_Q and BLOCK_K, chosen for speed on a CPU's cache). The non-attention
functions are numpy_fast's.
"""

import math

import numpy as np

from impls.numpy_fast import layer_norm, merge_heads, sinusoidal_positional_encoding, split_heads
from reference.checks import check_attention, check_multi_head

BACKEND = "numpy"
DTYPES = ("float64", "float32")

BLOCK_Q = 256  # queries per tile
BLOCK_K = 512  # keys per streamed block

__all__ = [
    "BACKEND", "DTYPES", "BLOCK_Q", "BLOCK_K", "attention_weights", "layer_norm", "merge_heads",
    "multi_head_attention", "scaled_dot_product_attention", "sinusoidal_positional_encoding", "split_heads",
]


def _block_sizes(block_q, block_k):
    bq = BLOCK_Q if block_q is None else int(block_q)
    bk = BLOCK_K if block_k is None else int(block_k)
    if bq < 1 or bk < 1:
        raise ValueError(f"block sizes must be at least 1, got block_q={block_q}, block_k={block_k}")
    return bq, bk


def _scale(d_k, scale):
    return 1.0 / math.sqrt(d_k) if scale is None else float(scale)


class _Tiles:
    """q, k, v broadcast to common leading dims (views), the mask, and which tiles each query block needs."""

    def __init__(self, q, k, mask, is_causal, v=None):
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], *(() if v is None else (v.shape[:-2],)))
        self.L_q, self.L_k = q.shape[-2], k.shape[-2]
        self.q = np.broadcast_to(q, (*lead, *q.shape[-2:]))  # (*lead, L_q, d_k), a view
        self.kT = np.swapaxes(np.broadcast_to(k, (*lead, *k.shape[-2:])), -1, -2)  # (*lead, d_k, L_k), a view
        self.v = None if v is None else np.broadcast_to(v, (*lead, *v.shape[-2:]))  # (*lead, L_k, d_v)
        self.lead = lead
        self.mask = None if mask is None else (mask if mask.ndim >= 2 else mask[None, :])  # (..., L_q or 1, L_k or 1)
        self.is_causal = is_causal
        self.offset = self.L_k - self.L_q  # causal: query i sees keys j <= i + offset

    def key_range(self, i0, i1):
        """Keys any query of block [i0, i1) may see: [0, L_k), cut at the causal diagonal's last column."""
        if not self.is_causal:
            return self.L_k
        return max(0, min(self.L_k, i1 + self.offset))  # query i1 - 1 sees keys up to i1 - 1 + offset

    def hidden(self, i0, i1, j0, j1):
        """Which (query, key) pairs of the tile are hidden, broadcastable to (*lead, bq, bk); None: none is."""
        hide = None
        if self.mask is not None:
            m = self.mask
            rows = slice(i0, i1) if m.shape[-2] > 1 else slice(0, 1)
            cols = slice(j0, j1) if m.shape[-1] > 1 else slice(0, 1)
            hide = ~m[..., rows, cols]  # (..., bq or 1, bk or 1)
        if self.is_causal and j1 - 1 > i0 + self.offset:  # the tile straddles the diagonal
            above = np.arange(j0, j1) > np.arange(i0, i1)[:, None] + self.offset  # (bq, bk)
            hide = above if hide is None else hide | above
        return hide


def _masked_scores(tiles, qs, i0, i1, j0, j1, out):
    """S = (scale Q_i) K_j^T for one tile, hidden pairs at -inf; None when the whole tile is hidden."""
    hide = tiles.hidden(i0, i1, j0, j1)
    if hide is not None and hide.all():
        return None  # nothing visible in this tile: skip it
    s = np.matmul(qs, tiles.kT[..., j0:j1], out=out[..., : j1 - j0])  # (*lead, bq, bk)
    if hide is not None:
        np.copyto(s, -np.inf, where=hide)  # exp(-inf) = 0: an exact zero weight
    return s


def _new_max(m, s):
    """The running max m' = max(m, max_j s_j), and the value to subtract: m', or 0 where m' = -inf.

    A row that has seen no visible key yet has m' = -inf; subtracting 0 there keeps
    exp(-inf - 0) = 0 instead of exp(-inf + inf) = NaN, and m' itself stays -inf, so the
    next block's max is the true one (a stand-in 0 would underflow rows of very negative scores).
    """
    m_new = np.maximum(m, s.max(axis=-1, keepdims=True))  # (*lead, bq, 1)
    return m_new, np.where(np.isneginf(m_new), 0.0, m_new).astype(m.dtype, copy=False)


# --8<-- [start:online_softmax]
def _attend(tiles, scale, bq, bk, dtype):
    """softmax(Q K^T * scale) V over visible keys, one query block at a time, keys streamed in blocks."""
    lead, L_q, d_v = tiles.lead, tiles.L_q, tiles.v.shape[-1]
    out = np.zeros((*lead, L_q, d_v), dtype)  # (*lead, L_q, d_v); rows that see nothing stay 0
    s_buf = np.empty((*lead, min(bq, L_q), min(bk, tiles.L_k)), dtype)  # one tile of scores, reused
    for i0 in range(0, L_q, bq):
        i1 = min(i0 + bq, L_q)
        qs = tiles.q[..., i0:i1, :] * scale  # (*lead, bq, d_k): the scale goes into Q, not into S
        m = np.full((*lead, i1 - i0, 1), -np.inf, dtype)  # running max
        l = np.zeros((*lead, i1 - i0, 1), dtype)  # running sum of exp(s - m)
        acc = np.zeros((*lead, i1 - i0, d_v), dtype)  # running sum of exp(s - m) v
        for j0 in range(0, tiles.key_range(i0, i1), bk):  # causal: blocks above the diagonal never come
            j1 = min(j0 + bk, tiles.L_k)
            s = _masked_scores(tiles, qs, i0, i1, j0, j1, s_buf[..., : i1 - i0, :])
            if s is None:
                continue
            m_new, shift = _new_max(m, s)  # m' = max(m, max_j s_j)
            alpha = np.exp(m - shift)  # exp(m - m'): rescales what was summed under the old max
            s -= shift
            np.exp(s, out=s)  # P_b = exp(s - m'), exactly 0 on hidden keys
            l *= alpha
            l += s.sum(axis=-1, keepdims=True)  # l' = alpha l + sum_j P_b
            acc *= alpha
            acc += s @ tiles.v[..., j0:j1, :]  # a' = alpha a + P_b V_b
            m = m_new
        np.divide(acc, l, out=out[..., i0:i1, :], where=l > 0)  # a / l; l = 0: no visible key, output 0
    return out
# --8<-- [end:online_softmax]


def _weights(tiles, scale, bq, bk, dtype):
    """P, tile by tile: pass 1 writes each tile's scores and keeps each row's online max and normaliser,
    pass 2 turns the written tiles into exp(s - m) / l in place."""
    lead, L_q, L_k = tiles.lead, tiles.L_q, tiles.L_k
    p = np.zeros((*lead, L_q, L_k), dtype)  # the result itself is L_q x L_k; nothing else is
    for i0 in range(0, L_q, bq):
        i1 = min(i0 + bq, L_q)
        qs = tiles.q[..., i0:i1, :] * scale  # (*lead, bq, d_k)
        m = np.full((*lead, i1 - i0, 1), -np.inf, dtype)
        l = np.zeros((*lead, i1 - i0, 1), dtype)
        written = []
        for j0 in range(0, tiles.key_range(i0, i1), bk):  # pass 1: as in _attend, without V
            j1 = min(j0 + bk, L_k)
            s = _masked_scores(tiles, qs, i0, i1, j0, j1, p[..., i0:i1, j0:j1])
            if s is None:
                continue  # a skipped tile stays 0
            written.append(s)
            m_new, shift = _new_max(m, s)
            l *= np.exp(m - shift)
            l += np.exp(s - shift).sum(axis=-1, keepdims=True)
            m = m_new
        shift = np.where(np.isneginf(m), 0.0, m).astype(dtype, copy=False)  # the row's final max
        inv = np.divide(1.0, l, out=np.zeros_like(l), where=l > 0)  # 1 / l; 0 for a row with no visible key
        for s in written:  # pass 2: P = exp(s - m) / l
            s -= shift
            np.exp(s, out=s)
            s *= inv
    return p


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, block_q=None, block_k=None):
    """softmax(Q K^T * scale) V by online softmax; q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v)."""
    check_attention(q, k, v, mask=mask)
    bq, bk = _block_sizes(block_q, block_k)
    dtype = np.result_type(q, k, v)
    tiles = _Tiles(q, k, mask, is_causal, v)
    return _attend(tiles, _scale(q.shape[-1], scale), bq, bk, dtype)  # (..., L_q, d_v)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, block_q=None, block_k=None):
    """P = softmax(Q K^T * scale) over visible keys, computed tile by tile; (..., L_q, L_k)."""
    check_attention(q, k, mask=mask)
    bq, bk = _block_sizes(block_q, block_k)
    tiles = _Tiles(q, k, mask, is_causal)
    return _weights(tiles, _scale(q.shape[-1], scale), bq, bk, np.result_type(q, k))


def _linear(x, w, b):
    y = x @ w  # (B, L, D) @ (D, D) -> (B, L, D)
    return y if b is None else y + b


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False,
                         block_q=None, block_k=None):
    """Concat(head_1..head_H) W^O + b_O with chunked heads; query (B, L_q, D), key/value (B, L_k, D)."""
    d_k, _ = check_multi_head(query, key, value, weights, num_heads, mask)
    bq, bk = _block_sizes(block_q, block_k)
    # 1) project and split: (B, L, D) -> (B, H, L, d_k)
    q = split_heads(_linear(query, weights["w_q"], weights.get("b_q")), num_heads)
    k = split_heads(_linear(key, weights["w_k"], weights.get("b_k")), num_heads)
    v = split_heads(_linear(value, weights["w_v"], weights.get("b_v")), num_heads)
    # 2) attend, all heads at once, one query block at a time
    heads = _attend(_Tiles(q, k, mask, is_causal, v), 1.0 / math.sqrt(d_k), bq, bk, q.dtype)  # (B, H, L_q, d_k)
    # 3) concat along the features, then W^O
    return _linear(merge_heads(heads), weights["w_o"], weights.get("b_o"))  # (B, L_q, D)
