"""Reformer: attention within locality-sensitive-hashing buckets (seed 001 §5.1; Kitaev et al. 2020).

    h(x) = argmax([x̂ R ; -x̂ R])  ∈ {0, ..., n_b - 1},   x̂ = x / |x|,   R ∈ R^{d × n_b/2} random N(0, 1)
    (n_b even; n_b = 1 is the degenerate case of no rotation at all: every vector in bucket 0)

    query i sees key j  iff  h(q_i) = h(k_j)

Angular LSH (Andoni et al. 2015): vectors pointing in similar directions (large q · k,
the keys that dominate a softmax row) land in the same bucket with high probability.
Sorting by bucket (O(L log L)) and attending within each bucket costs Σ_b n_b² instead
of L²: with buckets of a fixed average size c (n_b = L / c), about O(L log L + L c)
(the seed's table: O(L log L)). The result is exactly naive attention under the mask
`h(q_i) = h(k_j)` (`lsh_mask`); with a single bucket that mask hides nothing and it is
exactly softmax attention (claim EFF-5). The published model ties Q = K, hashes several
rounds and chunks the sorted sequence; this reference keeps the one idea.
"""

import numpy as np

from reference.attention import scaled_dot_product_attention


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


def lsh_mask(q, k, rotations):
    """M[i, j] = h(q_i) = h(k_j); (L_q, L_k) bool, for naive attention's mask=."""
    return lsh_buckets(q, rotations)[:, None] == lsh_buckets(k, rotations)[None, :]


def reformer_attention(q, k, v, rotations, scale=None):
    """Attention within LSH buckets, bucket by bucket after sorting; q (L_q, d_k), k (L, d_k), v (L, d_v)."""
    hq, hk = lsh_buckets(q, rotations), lsh_buckets(k, rotations)  # (L_q,), (L,)
    q_order, k_order = np.argsort(hq, kind="stable"), np.argsort(hk, kind="stable")  # O(L log L)
    num_buckets = max(2 * rotations.shape[1], 1)
    q_starts = np.searchsorted(hq[q_order], np.arange(num_buckets + 1))  # bucket b: q_order[q_starts[b]:q_starts[b+1]]
    k_starts = np.searchsorted(hk[k_order], np.arange(num_buckets + 1))
    out = np.zeros((q.shape[0], v.shape[-1]), dtype=np.result_type(q, v))  # a query with no key in its bucket: 0
    for b in range(num_buckets):
        qi = q_order[q_starts[b]:q_starts[b + 1]]
        kj = k_order[k_starts[b]:k_starts[b + 1]]
        if len(qi) and len(kj):
            out[qi] = scaled_dot_product_attention(q[qi], k[kj], v[kj], scale=scale)  # (n_q_b, d_v), scores n_q_b x n_k_b
    return out
# --8<-- [end:lsh]
