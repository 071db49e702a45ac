"""A paged KV cache: keys and values kept in fixed-size blocks of one shared pool, found through a
block table (vLLM's PagedAttention, Kwon et al. 2023; FlashAttention's `block_table`).

    k_cache, v_cache   (N, H_kv, S, d)   N blocks of S token slots each, shared by every sequence
    block_table        (B, M)  int       block_table[b, n]: the pool block holding tokens n·S .. n·S + S - 1 of sequence b
    seq_lens           (B,)    int       how many tokens sequence b has cached (0 .. M·S)

    token t of sequence b  =  k_cache[block_table[b, t // S], :, t % S]        (H_kv, d)

    K_b = [k_cache[block_table[b, 0]] | k_cache[block_table[b, 1]] | ...][:, :seq_lens[b]]   (H_kv, seq_lens[b], d)
    out_b = Attention(q_b, K_b, V_b)      q_b (H, L_q, d): the last L_q tokens of sequence b

so paged attention is attention over the contiguous cache (reference.kv_cache) read through a table:
where the blocks lie in the pool, and what the slots past seq_lens[b] hold, changes nothing.
With is_causal the L_q queries are the last L_q positions of their own sequence (bottom-right, as in
CONTRACT.md): query i of sequence b sees token j when j <= i + seq_lens[b] - L_q. Query head h reads
K/V head h // (H / H_kv) (grouped-query attention, reference.grouped_query).

The block is head-first, (H_kv, S, d): a block is a short stretch of the contract's (..., H, L, d)
cache. FlashAttention's flash_attn_with_kvcache and vLLM's FlashAttention backend store blocks
token-first, (N, S, H_kv, d) ("NHD"): `k_cache.transpose(0, 2, 1, 3)` converts between the two.
FlashInfer takes either ("NHD" or "HND"); vLLM's original paged-attention kernel splits d further
for its memory reads ((N, H_kv, d/x, S, x) for keys).
"""

import numpy as np

from reference.attention import scaled_dot_product_attention
from reference.checks import check_paged
from reference.grouped_query import repeat_kv_heads


# --8<-- [start:gather]
def gather(cache, table_row, seq_len: int):
    """One sequence's contiguous keys (or values): its blocks in table order, cut at seq_len; (H_kv, seq_len, d)."""
    S = cache.shape[2]
    used = -(-seq_len // S)  # ceil(seq_len / S): the blocks that hold tokens 0 .. seq_len - 1
    blocks = [cache[table_row[n]] for n in range(used)]  # each (H_kv, S, d), in the table's order
    if not blocks:
        return cache[:0].reshape(cache.shape[1], 0, cache.shape[3])  # no token cached: (H_kv, 0, d)
    return np.concatenate(blocks, axis=-2)[:, :seq_len]  # (H_kv, used·S, d) -> the first seq_len slots
# --8<-- [end:gather]


# --8<-- [start:paged_attention]
def paged_attention(q, k_cache, v_cache, block_table, seq_lens, is_causal=False, scale=None):
    """Attention of q (B, H, L_q, d_k) over each sequence's cached tokens, read through block_table; (B, H, L_q, d_v)."""
    check_paged(q, k_cache, v_cache, block_table, seq_lens)
    q, k_cache, v_cache = (np.asarray(x) for x in (q, k_cache, v_cache))
    B, H, L_q = q.shape[:3]
    out = np.zeros((B, H, L_q, v_cache.shape[-1]), dtype=np.result_type(q, v_cache))
    for b in range(B):  # each sequence has its own length: one attention call per sequence
        n = int(seq_lens[b])
        k = repeat_kv_heads(gather(k_cache, block_table[b], n), H)  # (H, n, d_k)
        v = repeat_kv_heads(gather(v_cache, block_table[b], n), H)  # (H, n, d_v)
        if n:  # n = 0: nothing cached, every row is dead and outputs 0
            out[b] = scaled_dot_product_attention(q[b], k, v, is_causal=is_causal, scale=scale)
    return out
# --8<-- [end:paged_attention]


# --8<-- [start:to_paged]
def to_paged(k, v, seq_lens, block_size: int, rng=None):
    """A contiguous cache k (B, H_kv, T, d_k), v (B, H_kv, T, d_v), tokens 0 .. seq_lens[b] - 1 of row b, as a paged
    one: (k_cache, v_cache, block_table). Without rng the blocks lie in order; with it, at random places in a pool
    with spare blocks, and every slot no token fills (the spare blocks, the tail of a last block) holds noise."""
    k, v = np.asarray(k), np.asarray(v)
    B, H_kv, T = k.shape[:3]
    S = block_size
    M = max(1, -(-T // S))  # table width: blocks enough for the longest row
    counts = [-(-int(n) // S) for n in seq_lens]  # blocks each row uses
    N = sum(counts) + (0 if rng is None else 2)  # two spare blocks that no row uses
    place = np.arange(N) if rng is None else rng.permutation(N)  # pool block of the i-th block handed out
    k_cache = np.zeros((N, H_kv, S, k.shape[-1])) if rng is None else rng.standard_normal((N, H_kv, S, k.shape[-1]))
    v_cache = np.zeros((N, H_kv, S, v.shape[-1])) if rng is None else rng.standard_normal((N, H_kv, S, v.shape[-1]))
    table = np.zeros((B, M), dtype=np.int64)
    given = 0
    for b, n in enumerate(seq_lens):
        for m in range(counts[b]):
            p = place[given]
            given += 1
            table[b, m] = p
            t = slice(m * S, min((m + 1) * S, int(n)))  # the tokens block m holds
            k_cache[p, :, : t.stop - t.start] = k[b, :, t]
            v_cache[p, :, : t.stop - t.start] = v[b, :, t]
    return k_cache, v_cache, table
# --8<-- [end:to_paged]
