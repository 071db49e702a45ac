"""Exact attention by online softmax, in PyTorch: never an L_q x L_k matrix (the contract, docs/contract.md).

The algorithm of `numpy_chunked` (read its docstring for the update rule of the running
max m, normaliser l and output accumulator a), arranged for PyTorch on a CPU:

- leading dims are flattened to one batch axis N (heads), so that each tile is one batched GEMM:
  S = (scale Q_i) K_j^T is `torch.bmm` into a score buffer allocated once (the scale goes into
  the block_q x d_k block of Q, not into the block_q x block_k block of S), and
  a' = alpha a + P V_j is `acc.baddbmm_(P, V_j)`, in place;
- the softmax is updated in place (`sub_`, `exp2_`, `mul_`), so a tile costs no allocation
  beyond a few (n, block_q, 1) vectors; it runs in base 2 (exp(x) = 2^(x log2 e), log2 e
  folded into Q with the scale), as flash kernels do: exp2 costs a third of exp on a CPU;
- with `is_causal` (bottom-right aligned) the key blocks wholly above the diagonal are never
  computed, and tiles a mask hides completely are skipped;
- float16 and bfloat16 inputs are computed in float32 (scores, exponentials and the
  accumulator, as flash kernels do) and the output is rounded once, at the end.

One function, `_query_block`, computes the rows of one query block for some heads. Two
schedules call it: the plain path (`_attend`) takes the query blocks in turn, every head at
once, each operation spread over PyTorch's threads; the fast path (`_attend_parallel`) gives
each (head, query block) to a pool of threads that run PyTorch with one thread each, so a
tile stays with one core and no core waits for another inside an operation. The
fast path is taken without autograd from N L_q L_k >= FAST_MIN_SCORES on (`fast=` forces
either); a meta test checks that both paths agree with each other and with the reference.

Dropout (`dropout_p`, `generator`; `training` in `multi_head_attention`) as in numpy_chunked: l sums
every exponential, the accumulator takes P_b * M_b / (1 - p), and M_b of each tile is computed from
its weights' positions and one key drawn from the caller's `torch.Generator`
(impls/_counter_dropout.py): the same pattern on both paths and for every block size.

Block sizes: `scaled_dot_product_attention`, `attention_weights` and `multi_head_attention`
take `block_q` and `block_k` (any size >= 1; None means BLOCK_Q and BLOCK_K). The
non-attention functions are torch_sdpa's.
"""

import math
import threading
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.nn.functional as F

from impls._counter_dropout import keep_factors, key_from
from impls._heads import multi_head
from impls._mask_keywords import and_masks, extra_mask, values_no_query_sees_zeroed
from impls._tiling import TilePlan, block_sizes
from impls.torch_sdpa import layer_norm, merge_heads, sinusoidal_positional_encoding, split_heads
from reference.checks import check_attention, check_multi_head
from reference.dropout import check_dropout_p

BACKEND = "torch"
DEVICE = "cpu"
DTYPES = ("float64", "float32", "float16", "bfloat16")
FLASH_KERNEL = True  # online softmax over key blocks, never L_q x L_k: EFF-3 applies

BLOCK_Q = 512  # queries per tile
BLOCK_K = 1024  # keys per streamed block
LOG2_E = 1.0 / math.log(2.0)  # exp(x) = 2^(x * LOG2_E)

__all__ = [
    "BACKEND", "DEVICE", "DTYPES", "BLOCK_Q", "BLOCK_K", "attention_weights", "layer_norm", "merge_heads",
    "multi_head_attention", "scaled_dot_product_attention", "sinusoidal_positional_encoding", "split_heads",
]

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _scale(d_k, scale):
    return 1.0 / math.sqrt(d_k) if scale is None else float(scale)


class _Tiles(TilePlan):
    """q, k, v flattened to (N, L, d) in the compute dtype, and the tiling plan (impls/_tiling.py)."""

    def __init__(self, q, k, mask, is_causal, block_q, block_k, v=None):
        lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], *(() if v is None else (v.shape[:-2],)))
        if mask is not None:  # (*lead, L_q or 1, L_k or 1), a view; a tile of it is flattened per use
            mask = mask if mask.dim() >= 2 else mask[None, :]
            mask = mask.expand(*lead, *mask.shape[-2:])
        super().__init__(q.shape[-2], k.shape[-2], mask, is_causal,
                         *block_sizes(block_q, block_k, BLOCK_Q, BLOCK_K), arange=torch.arange)
        self.lead, self.dtype = lead, q.dtype
        self.compute = torch.float32 if q.dtype in _LOW_PRECISION else q.dtype

        def flat(x):  # (..., L, d) -> (N, L, d); copies only to broadcast or to leave a low precision
            n = math.prod(lead)  # not -1: with L_q = 0 or L_k = 0 the size cannot tell N
            return x.expand(*lead, *x.shape[-2:]).reshape(n, *x.shape[-2:]).to(self.compute)

        self.q, self.k = flat(q), flat(k)  # (N, L_q, d_k), (N, L_k, d_k)
        self.kT = self.k.transpose(1, 2)  # (N, d_k, L_k), a view
        self.v = None if v is None else flat(v)  # (N, L_k, d_v)
        self.N = self.q.shape[0]
        self.drop = None  # dropout: (key, p), set by with_dropout

    def with_dropout(self, dropout_p, generator):
        """Dropout on (dropout_p > 0): one key drawn from the caller's generator for the whole call."""
        if dropout_p > 0:
            self.drop = (key_from(generator, "torch"), dropout_p)
        return self

    def keep(self, heads, i0, i1, j0, j1):
        """M / (1 - p) of tile [i0, i1) x [j0, j1) for the heads `heads` (a slice of N): (n, bq, bk)."""
        key, p = self.drop
        n0, n1, _ = heads.indices(self.N)
        factors = keep_factors(key, p, self.L_q, self.L_k, (n0, n1), (i0, i1), (j0, j1))  # (n, bq, bk), NumPy
        return torch.from_numpy(factors).to(self.compute)

    def hidden(self, i0, i1, j0, j1):
        return super().hidden(i0, i1, j0, j1, flat=lambda tile: tile.reshape(self.N, *tile.shape[-2:]))


def _masked_scores(tiles, qs, heads, i0, i1, j0, j1, buf):
    """S = scale Q_i K_j^T for one tile of the heads `heads` (a slice of N), hidden pairs at -inf;
    None when the whole tile is hidden.

    `buf` is where to write S (a reused buffer); None under autograd, which cannot see through out=.
    """
    hide = tiles.hidden(i0, i1, j0, j1)  # (N, bq, bk), (bq, bk) or None
    if hide is not None and hide.dim() == 3:
        hide = hide[heads]
    if hide is not None and bool(hide.all()):
        return None  # nothing visible in this tile: skip it
    kT = tiles.kT[heads, :, j0:j1]  # (n, d_k, bk)
    if buf is None:
        s = torch.bmm(qs, kT)  # (n, bq, bk)
        return s if hide is None else s.masked_fill(hide, -math.inf)
    s = torch.bmm(qs, kT, out=buf[:, : i1 - i0, : j1 - j0])  # (n, bq, bk)
    return s if hide is None else s.masked_fill_(hide, -math.inf)  # exp(-inf) = 0: an exact zero weight


def _new_max(m, s):
    """The running max m' = max(m, max_j s_j), and the value to subtract: m', or 0 where m' = -inf.

    A row that has seen no visible key yet keeps m' = -inf (so that the next block's max is
    the true one) while exp(s - 0) = exp(-inf) = 0 stays exact, not NaN.
    """
    m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))  # (n, bq, 1)
    return m_new, m_new.masked_fill(m_new == -math.inf, 0.0)


def _needs_grad(*xs):
    return torch.is_grad_enabled() and any(x is not None and x.requires_grad for x in xs)


# --8<-- [start:online_softmax]
def _query_block(tiles, scale, heads, i0, i1, buf=None, out=None):
    """Rows i0:i1 of softmax(Q K^T * scale) V for the heads `heads` (a slice of N), keys streamed in blocks.

    With `buf` and `out` (no autograd) every update is in place and the rows are written into
    out; without them the same arithmetic runs out of place and the rows are returned.
    """
    ct, d_v = tiles.compute, tiles.v.shape[-1]
    # Scores in base 2: exp(x) = 2^(x log2 e), and exp2 costs a third of exp on a CPU. The factor
    # log2 e goes into Q with the scale (a block_q x d_k block, not the block_q x block_k block of S).
    qs = tiles.q[heads, i0:i1] * (scale * LOG2_E)  # (n, bq, d_k)
    n, inplace = qs.shape[0], buf is not None
    m = torch.full((n, i1 - i0, 1), -math.inf, dtype=ct)  # running max (base 2)
    l = torch.zeros(n, i1 - i0, 1, dtype=ct)  # running sum of 2^(s - m)
    acc = torch.zeros(n, i1 - i0, d_v, dtype=ct)  # running sum of 2^(s - m) v
    for j0, j1 in tiles.key_blocks(i0, i1):  # causal: blocks above the diagonal never come
        s = _masked_scores(tiles, qs, heads, i0, i1, j0, j1, buf)
        if s is None:
            continue
        m_new, shift = _new_max(m, s)  # m' = max(m, max_j s_j)
        alpha = torch.exp2(m - shift)  # 2^(m - m'): rescales what was summed under the old max
        v_b = tiles.v[heads, j0:j1]  # (n, bk, d_v)
        keep = None if tiles.drop is None else tiles.keep(heads, i0, i1, j0, j1)  # M_b / (1 - p)
        if inplace:
            p = s.sub_(shift).exp2_()  # P_b = 2^(s - m'), exactly 0 on hidden keys
            l.mul_(alpha).add_(p.sum(dim=-1, keepdim=True))  # l' = alpha l + sum_j P_b
            acc.mul_(alpha).baddbmm_(p if keep is None else p.mul_(keep), v_b)  # a' = alpha a + P_b V_b
        else:
            p = torch.exp2(s - shift)
            l = l * alpha + p.sum(dim=-1, keepdim=True)
            acc = torch.baddbmm(acc * alpha, p if keep is None else p * keep, v_b)
        m = m_new
    l = torch.where(l > 0, l, 1.0)  # l = 0 only where a = 0 (no visible key): the output row is 0
    if not inplace:
        return acc / l
    torch.div(acc, l, out=out[heads, i0:i1])  # a / l
    return None


def _attend(tiles, scale, inplace):
    """softmax(Q K^T * scale) V, one query block of every head at a time: the plain path.

    inplace=False (under autograd) does the same arithmetic with out-of-place operations.
    """
    N, L_q, L_k, ct, every = tiles.N, tiles.L_q, tiles.L_k, tiles.compute, slice(None)
    if not inplace:
        out = torch.cat([_query_block(tiles, scale, every, i0, i1) for i0, i1 in tiles.query_blocks()], dim=1)
    else:
        buf = torch.empty(N, min(tiles.bq, L_q), min(tiles.bk, L_k), dtype=ct)  # one tile, reused
        out = torch.empty(N, L_q, tiles.v.shape[-1], dtype=ct)
        for i0, i1 in tiles.query_blocks():
            _query_block(tiles, scale, every, i0, i1, buf, out)
    return out.reshape(*tiles.lead, L_q, out.shape[-1]).to(tiles.dtype)  # (..., L_q, d_v); not -1: L_q may be 0
# --8<-- [end:online_softmax]


# The fast path: the same _query_block, one head's query block per task, on a pool of threads
# that each run PyTorch with one intra-op thread. A task's score tile (block_q x block_k floats)
# stays with one core, and the cores never wait for each other inside an operation, as they do
# when every operation of the plain path is split over them (on a loaded machine each such wait
# can cost a time slice). Used without autograd from FAST_MIN_SCORES on;
# tests/test_torch_chunked_paths.py checks that both paths agree.
FAST_MIN_SCORES = 2**18  # N * L_q * L_k from which scaled_dot_product_attention takes the fast path
_pool, _pool_lock = None, threading.Lock()


def _thread_pool(workers):
    global _pool
    with _pool_lock:
        if _pool is None or _pool._max_workers != workers:
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="torch_chunked")
        return _pool


def _attend_parallel(tiles, scale, workers=None):
    """softmax(Q K^T * scale) V with the tasks (head n, query block i) shared among `workers` threads."""
    N, L_q, L_k, ct = tiles.N, tiles.L_q, tiles.L_k, tiles.compute
    workers = workers or torch.get_num_threads()
    out = torch.empty(N, L_q, tiles.v.shape[-1], dtype=ct)
    blocks = list(tiles.query_blocks())[::-1]  # causal: the longest rows first, so that the last tasks are short
    tasks = iter([(n, i0, i1) for i0, i1 in blocks for n in range(N)])
    take = threading.Lock()
    # each worker's score tile, allocated here so that a memory profiler following this thread sees it
    bufs = [torch.empty(1, min(tiles.bq, L_q), min(tiles.bk, L_k), dtype=ct) for _ in range(workers)]

    def worker(buf):
        torch.set_num_threads(1)  # this thread's operations run on this thread alone
        while True:
            with take:
                task = next(tasks, None)
            if task is None:
                return
            n, i0, i1 = task
            _query_block(tiles, scale, slice(n, n + 1), i0, i1, buf, out)

    before = torch.get_num_threads()
    try:
        for done in [_thread_pool(workers).submit(worker, buf) for buf in bufs]:
            done.result()
    finally:
        torch.set_num_threads(before)  # the workers' setting is process-wide in PyTorch: put it back
    return out.reshape(*tiles.lead, L_q, out.shape[-1]).to(tiles.dtype)


def _sdpa(tiles, scale, grad, fast):
    """The plain path under autograd or for small problems, the fast path otherwise (fast=None: choose)."""
    if fast is None:
        fast = tiles.N * tiles.L_q * tiles.L_k >= FAST_MIN_SCORES
    if grad or not fast:
        return _attend(tiles, scale, not grad)
    return _attend_parallel(tiles, scale)


def _weights(tiles, scale, inplace):
    """P, tile by tile: pass 1 computes each tile's scores and each row's online max and normaliser,
    pass 2 turns the tiles into exp(s - m) / l (in place, in the result, unless under autograd)."""
    N, L_q, L_k, ct = tiles.N, tiles.L_q, tiles.L_k, tiles.compute
    p = torch.zeros(N, L_q, L_k, dtype=ct)  # the result itself is L_q x L_k; nothing else is
    rows = []
    for i0, i1 in tiles.query_blocks():
        qs = tiles.q[:, i0:i1] * scale
        m = torch.full((N, i1 - i0, 1), -math.inf, dtype=ct)
        l = torch.zeros(N, i1 - i0, 1, dtype=ct)
        tiles_of_row = []
        for j0, j1 in tiles.key_blocks(i0, i1):  # pass 1
            s = _masked_scores(tiles, qs, slice(None), i0, i1, j0, j1, p[:, i0:, j0:] if inplace else None)
            if s is None:
                continue  # a skipped tile stays 0
            tiles_of_row.append((j0, j1, s))
            m_new, shift = _new_max(m, s)
            l = l * torch.exp(m - shift) + torch.exp(s - shift).sum(dim=-1, keepdim=True)
            m = m_new
        shift = m.masked_fill(m == -math.inf, 0.0)
        inv = torch.where(l > 0, 1.0 / torch.where(l > 0, l, 1.0), 0.0)  # 0 for a row with no visible key
        every = slice(None)
        if inplace:
            for j0, j1, s in tiles_of_row:  # pass 2: P = exp(s - m) / l; P' = P * M / (1 - p)
                s.sub_(shift).exp_().mul_(inv)
                if tiles.drop is not None:
                    s.mul_(tiles.keep(every, i0, i1, j0, j1))
        else:
            row = [torch.zeros(N, i1 - i0, L_k, dtype=ct)]
            for j0, j1, s in tiles_of_row:
                s = torch.exp(s - shift) * inv
                s = s if tiles.drop is None else s * tiles.keep(every, i0, i1, j0, j1)
                row.append(F.pad(s, (j0, L_k - j1)))  # the tile, in place in its row
            rows.append(sum(row))
    if not inplace:
        p = torch.cat(rows, dim=1)  # (N, L_q, L_k)
    return p.reshape(*tiles.lead, L_q, L_k).to(tiles.dtype)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, block_q=None, block_k=None,
                                 fast=None, window_size=None, q_segment_ids=None, kv_segment_ids=None, dropout_p=0.0,
                                 generator=None):
    """softmax(Q K^T * scale) V by online softmax; q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v).

    fast: True for the thread-pool path, False for the plain one, None (default) to choose by size.
    window_size and segment ids become one (L_q, L_k) mask ANDed with `mask` (correct, not O(L) in memory).
    dropout_p > 0: P' V, the pattern drawn from `generator` (torch.Generator), the same for every block size.
    """
    check_attention(q, k, v, mask=mask)
    dropout_p = check_dropout_p(dropout_p)
    mask = and_masks(mask, extra_mask(q, q.shape[-2], k.shape[-2], window_size, q_segment_ids, kv_segment_ids))
    v = values_no_query_sees_zeroed(v, mask, is_causal, q.shape[-2], k.shape[-2])  # 0 · NaN is NaN in a tile
    tiles = _Tiles(q, k, mask, is_causal, block_q, block_k, v).with_dropout(dropout_p, generator)
    return _sdpa(tiles, _scale(q.shape[-1], scale), _needs_grad(q, k, v), fast)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, block_q=None, block_k=None,
                      window_size=None, q_segment_ids=None, kv_segment_ids=None, dropout_p=0.0, generator=None):
    """P = softmax(Q K^T * scale) over visible keys, computed tile by tile; (..., L_q, L_k).

    dropout_p > 0: P' = P * M / (1 - p), M as scaled_dot_product_attention draws it from the same generator state."""
    check_attention(q, k, mask=mask)
    dropout_p = check_dropout_p(dropout_p)
    mask = and_masks(mask, extra_mask(q, q.shape[-2], k.shape[-2], window_size, q_segment_ids, kv_segment_ids))
    tiles = _Tiles(q, k, mask, is_causal, block_q, block_k).with_dropout(dropout_p, generator)
    return _weights(tiles, _scale(q.shape[-1], scale), not _needs_grad(q, k))


def _linear(x, w, b):
    """y = x W + b; F.linear wants nn.Linear's (out, in) weight, so it gets W^T (a view)."""
    return F.linear(x, w.t(), b)


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

    def attend(q, k, v):  # (B, H, L, d_k) heads
        tiles = _Tiles(q, k, mask, is_causal, block_q, block_k, v).with_dropout(dropout_p, generator)
        return _sdpa(tiles, scale, _needs_grad(q, k, v), None)

    return multi_head(query, key, value, weights, num_heads, attend, _linear, split_heads, merge_heads)
