"""Exact attention by online softmax, in NumPy: never an L_q x L_k matrix (lecture note 2 §4.1); follows CONTRACT.md.

"Split the big matrix into small blocks" (lecture note 2 §4.1), done so that the result is
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

Dropout (`dropout_p`, `generator`; `training` in `multi_head_attention`) as FlashAttention does it:
the normaliser l sums the undropped exponentials, and only the accumulator takes the dropped ones,

    a' = alpha a + (P_b * M_b / (1 - p)) V_b

so the output is P' V with P' = P M / (1 - p). Each tile's M_b is computed from the weights'
positions and one key drawn from the caller's generator (impls/_counter_dropout.py), so the pattern
is the same for every block size, and no L_q x L_k array of draws is ever made.

Block sizes: `scaled_dot_product_attention`, `attention_weights` and
`multi_head_attention` take `block_q` and `block_k` (any size >= 1; None means the
defaults BLOCK_Q and BLOCK_K, chosen for speed on a CPU's cache). The non-attention
functions are numpy_fast's.
"""

import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from impls._counter_dropout import keep_factors, key_from
from impls._heads import multi_head
from impls._tiling import TilePlan, block_sizes
from impls.numpy_fast import layer_norm, merge_heads, sinusoidal_positional_encoding, split_heads
from impls._mask_keywords import and_masks, extra_mask, values_no_query_sees_zeroed
from reference.checks import check_attention, check_multi_head
from reference.dropout import check_dropout_p

BACKEND = "numpy"
DTYPES = ("float64", "float32")
FLASH_KERNEL = True  # online softmax over key blocks, never L_q x L_k: EFF-3 applies

BLOCK_Q = 64  # queries per tile: 8 heads x 64 x 512 float32 scores fill about 1 MiB (a core's L2)
BLOCK_K = 512  # keys per streamed block

__all__ = [
    "BACKEND", "DTYPES", "BLOCK_Q", "BLOCK_K", "attention_weights", "layer_norm", "merge_heads",
    "multi_head_attention", "scaled_dot_product_attention", "sinusoidal_positional_encoding", "split_heads",
]


def _scale(d_k, scale):
    return 1.0 / math.sqrt(d_k) if scale is None else float(scale)


class _Tiles(TilePlan):
    """q, k, v broadcast to common leading dims (views), and the tiling plan (impls/_tiling.py)."""

    def __init__(self, q, k, mask, is_causal, block_q, block_k, v=None):
        super().__init__(q.shape[-2], k.shape[-2], mask, is_causal,
                         *block_sizes(block_q, block_k, BLOCK_Q, BLOCK_K), arange=np.arange)
        lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], *(() if v is None else (v.shape[:-2],)))
        self.lead = lead
        self.q = np.broadcast_to(q, (*lead, *q.shape[-2:]))  # (*lead, L_q, d_k), a view
        self.kT = np.swapaxes(np.broadcast_to(k, (*lead, *k.shape[-2:])), -1, -2)  # (*lead, d_k, L_k), a view
        self.v = None if v is None else np.broadcast_to(v, (*lead, *v.shape[-2:]))  # (*lead, L_k, d_v)
        self.drop = None  # dropout: (key, p), set by with_dropout

    def with_dropout(self, dropout_p, generator):
        """Dropout on (dropout_p > 0): one key drawn from the caller's generator for the whole call."""
        if dropout_p > 0:
            self.drop = (key_from(generator, "numpy"), dropout_p)
        return self

    def keep(self, i0, i1, j0, j1, dtype):
        """M / (1 - p) of tile [i0, i1) x [j0, j1), (*lead, bq, bk): 1 / (1 - p) where kept, 0 where dropped."""
        key, p = self.drop
        n = int(np.prod(self.lead))
        factors = keep_factors(key, p, self.L_q, self.L_k, (0, n), (i0, i1), (j0, j1))  # (n, bq, bk)
        return factors.reshape(*self.lead, i1 - i0, j1 - j0).astype(dtype, copy=False)


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
    m_new = np.maximum(m, s.max(axis=-1, keepdims=True, initial=-np.inf))  # (*lead, bq, 1)
    return m_new, np.where(np.isneginf(m_new), 0.0, m_new).astype(m.dtype, copy=False)


# --8<-- [start:online_softmax]
def _attend_block(tiles, scale, i0, i1, out, s_buf):
    """Rows [i0, i1) of softmax(Q K^T * scale) V over visible keys, the keys streamed in blocks, into out."""
    lead, d_v, dtype = tiles.lead, tiles.v.shape[-1], out.dtype
    qs = tiles.q[..., i0:i1, :] * scale  # (*lead, bq, d_k): the scale goes into Q, not into S
    m = np.full((*lead, i1 - i0, 1), -np.inf, dtype)  # running max
    l = np.zeros((*lead, i1 - i0, 1), dtype)  # running sum of exp(s - m)
    acc = np.zeros((*lead, i1 - i0, d_v), dtype)  # running sum of exp(s - m) v
    for j0, j1 in tiles.key_blocks(i0, i1):  # causal: blocks above the diagonal never come
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
        if tiles.drop is not None:  # l took every weight; the output takes the kept ones, scaled
            s *= tiles.keep(i0, i1, j0, j1, dtype)  # P_b * M_b / (1 - p)
        acc += s @ tiles.v[..., j0:j1, :]  # a' = alpha a + P_b V_b
        m = m_new
    np.divide(acc, l, out=out[..., i0:i1, :], where=l > 0)  # a / l; l = 0: no visible key, output 0
# --8<-- [end:online_softmax]


def _attend(tiles, scale, dtype):
    """softmax(Q K^T * scale) V over visible keys, one query block at a time (several at once: _workers)."""
    out = np.zeros((*tiles.lead, tiles.L_q, tiles.v.shape[-1]), dtype)  # rows that see nothing stay 0
    tile_shape = (*tiles.lead, min(tiles.bq, tiles.L_q), min(tiles.bk, tiles.L_k))
    blocks = list(tiles.query_blocks())
    workers = _workers(tiles, len(blocks))
    if workers == 1:
        s_buf = np.empty(tile_shape, dtype)  # one tile of scores, reused
        for i0, i1 in blocks:
            _attend_block(tiles, scale, i0, i1, out, s_buf)
        return out
    from threadpoolctl import threadpool_limits

    local = threading.local()

    def run(block):
        if not hasattr(local, "s_buf"):
            local.s_buf = np.empty(tile_shape, dtype)  # one tile per worker
        _attend_block(tiles, scale, *block, out, local.s_buf)

    # Query blocks are independent and write disjoint rows of out. NumPy's ufuncs and BLAS release
    # the GIL, so each worker thread runs its own tiles (exp included, which NumPy runs on one core),
    # with BLAS on one thread per call: many small GEMMs each spread over all cores would spend more
    # time waking threads than multiplying.
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(workers) as pool:
        list(pool.map(run, blocks))
    return out


PARALLEL_MIN_SCORES = 1 << 21  # below 2M scores, one thread: starting workers costs more than it saves


def _workers(tiles, n_blocks: int) -> int:
    """How many query blocks to run at once: as many as BLAS has threads (threadpoolctl), for large problems."""
    if n_blocks < 2 or int(np.prod(tiles.lead)) * tiles.L_q * tiles.L_k < PARALLEL_MIN_SCORES:
        return 1
    try:
        from threadpoolctl import threadpool_info
    except ModuleNotFoundError:  # no way to keep BLAS from spawning threads of its own in each worker
        return 1
    threads = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    return max(1, min(n_blocks, max(threads, default=1)))


def _weights(tiles, scale, dtype):
    """P, tile by tile: pass 1 writes each tile's scores and keeps each row's online max and normaliser,
    pass 2 turns the written tiles into exp(s - m) / l in place."""
    lead, L_q, L_k = tiles.lead, tiles.L_q, tiles.L_k
    p = np.zeros((*lead, L_q, L_k), dtype)  # the result itself is L_q x L_k; nothing else is
    for i0, i1 in tiles.query_blocks():
        qs = tiles.q[..., i0:i1, :] * scale  # (*lead, bq, d_k)
        m = np.full((*lead, i1 - i0, 1), -np.inf, dtype)
        l = np.zeros((*lead, i1 - i0, 1), dtype)
        written = []
        for j0, j1 in tiles.key_blocks(i0, i1):  # pass 1: as in _attend, without V
            s = _masked_scores(tiles, qs, i0, i1, j0, j1, p[..., i0:i1, j0:j1])
            if s is None:
                continue  # a skipped tile stays 0
            written.append((j0, j1, s))
            m_new, shift = _new_max(m, s)
            l *= np.exp(m - shift)
            l += np.exp(s - shift).sum(axis=-1, keepdims=True)
            m = m_new
        shift = np.where(np.isneginf(m), 0.0, m).astype(dtype, copy=False)  # the row's final max
        inv = np.divide(1.0, l, out=np.zeros_like(l), where=l > 0)  # 1 / l; 0 for a row with no visible key
        for j0, j1, s in written:  # pass 2: P = exp(s - m) / l
            s -= shift
            np.exp(s, out=s)
            s *= inv
            if tiles.drop is not None:
                s *= tiles.keep(i0, i1, j0, j1, dtype)  # P' = P * M / (1 - p)
    return p


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, block_q=None, block_k=None,
                                 window_size=None, q_segment_ids=None, kv_segment_ids=None, dropout_p=0.0,
                                 generator=None):
    """softmax(Q K^T * scale) V by online softmax; q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v).

    window_size and segment ids become one (L_q, L_k) mask ANDed with `mask` (correct, not O(L) in memory).
    dropout_p > 0: P' V, the pattern drawn from `generator` (np.random.Generator), the same for every block size."""
    check_attention(q, k, v, mask=mask)
    dropout_p = check_dropout_p(dropout_p)
    mask = and_masks(mask, extra_mask(q, q.shape[-2], k.shape[-2], window_size, q_segment_ids, kv_segment_ids))
    v = values_no_query_sees_zeroed(v, mask, is_causal, q.shape[-2], k.shape[-2])  # 0 · NaN is NaN in a tile
    tiles = _Tiles(q, k, mask, is_causal, block_q, block_k, v).with_dropout(dropout_p, generator)
    return _attend(tiles, _scale(q.shape[-1], scale), np.result_type(q, k, v))  # (..., L_q, d_v)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, block_q=None, block_k=None,
                      window_size=None, q_segment_ids=None, kv_segment_ids=None, dropout_p=0.0, generator=None):
    """P = softmax(Q K^T * scale) over visible keys, computed tile by tile; (..., L_q, L_k).

    dropout_p > 0: P' = P * M / (1 - p), M as scaled_dot_product_attention draws it from the same generator state."""
    check_attention(q, k, mask=mask)
    dropout_p = check_dropout_p(dropout_p)
    mask = and_masks(mask, extra_mask(q, q.shape[-2], k.shape[-2], window_size, q_segment_ids, kv_segment_ids))
    tiles = _Tiles(q, k, mask, is_causal, block_q, block_k).with_dropout(dropout_p, generator)
    return _weights(tiles, _scale(q.shape[-1], scale), np.result_type(q, k))


def _linear(x, w, b):
    y = x @ w  # (B, L, D) @ (D, D) -> (B, L, D)
    return y if b is None else y + b


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False,
                         block_q=None, block_k=None, dropout_p=0.0, training=False, generator=None):
    """Concat(head_1..head_H) W^O + b_O with chunked heads; query (B, L_q, D), key/value (B, L_k, D).

    training=True: the heads' weights dropped with probability dropout_p; training=False: no dropout."""
    d_k, _ = check_multi_head(query, key, value, weights, num_heads, mask)
    block_sizes(block_q, block_k, BLOCK_Q, BLOCK_K)  # bad sizes fail before any work
    dropout_p = check_dropout_p(dropout_p)  # checked in evaluation too
    if not training:
        dropout_p = 0.0  # evaluation: no dropout, whatever dropout_p
    scale = 1.0 / math.sqrt(d_k)

    def attend(q, k, v):  # (B, H, L, d_k) heads, all at once, one query block at a time
        tiles = _Tiles(q, k, mask, is_causal, block_q, block_k, v).with_dropout(dropout_p, generator)
        return _attend(tiles, scale, q.dtype)

    return multi_head(query, key, value, weights, num_heads, attend, _linear, split_heads, merge_heads)
