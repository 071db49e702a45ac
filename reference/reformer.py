"""Reformer: attention within locality-sensitive-hashing buckets (lecture note 2 §5.1; Kitaev et al. 2020).

    h(x) = argmax([x̂ R ; -x̂ R])  ∈ {0, ..., n_b - 1},   x̂ = x / |x|,   R ∈ R^{d × n_b/2} random N(0, 1)
    (n_b even; n_b = 1 is the degenerate case of no rotation at all: every vector in bucket 0)

    query i sees key j  iff  h(q_i) = h(k_j)  and  (with chunks of c) j's chunk is i's or the one before

Angular LSH (Andoni et al. 2015): vectors pointing in similar directions (large q · k,
the keys that dominate a softmax row) land in the same bucket with high probability.
Queries and keys are each sorted by bucket (O(L log L)); LSH buckets are not of equal size,
so, as in the Reformer, the sorted sequences are cut into n equal chunks and the queries of
chunk i attend to the keys of chunks i - 1 and i that share their bucket. Each chunk's
scores are c × 2c: time O(L log L + L c), memory O(L c) (the lecture note's table: O(L log L)).

The result is exactly naive attention under `reformer_mask` (bucket equality and chunk
neighbourhood). Without chunking (chunk_size=None, one chunk) the mask is bucket equality
alone, and with a single bucket it hides nothing: exactly softmax attention (claim EFF-5).
The published model also ties Q = K and hashes several rounds; this reference keeps the
two ideas that set its cost, hashing and chunking.
"""

import math

import numpy as np

from reference.attention import masked_softmax


# --8<-- [start:lsh]
def lsh_rotations(rng: np.random.Generator, d: int, num_buckets: int) -> np.ndarray:
    """R ∈ R^{d × n_b/2} with N(0, 1) entries (no columns for a single bucket)."""
    if num_buckets != 1 and num_buckets % 2:
        raise ValueError(f"angular LSH needs an even number of buckets (or 1), got num_buckets={num_buckets}")
    return rng.standard_normal((d, num_buckets // 2))


def lsh_buckets(x, rotations):
    """h(x) = argmax([x̂ R, -x̂ R]); x (L, d), R (d, n_b/2) -> (L,) ints in 0 .. n_b - 1."""
    if rotations.shape[1] == 0:  # one bucket: nothing to hash
        return np.zeros(x.shape[0], dtype=np.int64)
    x_hat = x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-300)  # direction only
    r = x_hat @ rotations  # (L, n_b/2)
    return np.argmax(np.concatenate([r, -r], axis=-1), axis=-1)  # (L,)
# --8<-- [end:lsh]


def _chunking(L_q: int, L_k: int, chunk_size):
    """(n chunks, queries per chunk, keys per chunk): both sorted sequences cut into the same n chunks."""
    n = 1 if chunk_size is None else max(1, math.ceil(L_q / chunk_size))
    return n, math.ceil(L_q / n), math.ceil(L_k / n)


# --8<-- [start:reformer]
def reformer_mask(q, k, rotations, chunk_size=None):
    """M[i, j]: key j is in query i's bucket and in its chunk or the one before; (L_q, L_k) bool, for mask=."""
    hq, hk = lsh_buckets(q, rotations), lsh_buckets(k, rotations)
    n, cq, ck = _chunking(len(q), len(k), chunk_size)
    chunk_q = np.empty(len(q), dtype=np.int64)
    chunk_k = np.empty(len(k), dtype=np.int64)
    chunk_q[np.argsort(hq, kind="stable")] = np.arange(len(q)) // cq  # chunk of each query after sorting
    chunk_k[np.argsort(hk, kind="stable")] = np.arange(len(k)) // ck
    near = (chunk_k[None, :] == chunk_q[:, None]) | (chunk_k[None, :] == chunk_q[:, None] - 1)
    return (hq[:, None] == hk[None, :]) & near


def reformer_attention(q, k, v, rotations, chunk_size=None, scale=None):
    """Attention within LSH buckets, chunk by chunk after sorting; q (L_q, d_k), k (L, d_k), v (L, d_v)."""
    L_q, L_k, d_v = q.shape[0], k.shape[0], v.shape[-1]
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    hq, hk = lsh_buckets(q, rotations), lsh_buckets(k, rotations)
    q_order, k_order = np.argsort(hq, kind="stable"), np.argsort(hk, kind="stable")  # O(L log L)
    n, cq, ck = _chunking(L_q, L_k, chunk_size)

    def chunks(x, order, per, fill):  # sorted rows, padded to n * per, as (n, per, ...)
        x = x[order]
        pad = np.full((n * per - len(order),) + x.shape[1:], fill, dtype=x.dtype)
        return np.concatenate([x, pad]).reshape(n, per, *x.shape[1:])

    qs, bq = chunks(q, q_order, cq, 0), chunks(hq, q_order, cq, -1)  # (n, cq, d_k), (n, cq)
    ks, bk = chunks(k, k_order, ck, 0), chunks(hk, k_order, ck, -2)  # (n, ck, d_k); padding: bucket -2
    vs = chunks(v, k_order, ck, 0)  # (n, ck, d_v)
    look_back = lambda x: np.concatenate([np.roll(x, 1, axis=0), x], axis=1)  # noqa: E731 chunk i-1, then i
    ks, vs, bk = look_back(ks), look_back(vs), look_back(bk)  # (n, 2ck, ...)
    bk[0, :ck] = -2  # chunk 0 has no chunk before it (roll wrapped the last one around)
    scores = (qs @ np.swapaxes(ks, -1, -2)) * scale  # (n, cq, 2ck): the only scores ever formed
    p = masked_softmax(scores, bq[:, :, None] == bk[:, None, :])  # same bucket only; none visible -> 0
    out = np.zeros((L_q, d_v), dtype=np.result_type(q, v))
    out[q_order] = (p @ vs).reshape(n * cq, d_v)[:L_q]  # back to the original order
    return out
# --8<-- [end:reformer]
