"""Worked example: the online softmax by hand, one query, 5 keys in blocks of 2, against the reference."""
import numpy as np

from reference import scaled_dot_product_attention

np.set_printoptions(precision=4, suppress=True)

s = np.array([1.0, 3.0, 0.0, 2.0, 5.0])  # one query's (already scaled) scores
v = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [0.0, 2.0]])  # (L_k, d_v)

m, l, acc = -np.inf, 0.0, np.zeros(2)  # running max, running normaliser, unnormalised output
for start in range(0, 5, 2):  # key blocks [0, 1], [2, 3], [4]
    sb, vb = s[start:start + 2], v[start:start + 2]
    m_new = max(m, sb.max())
    l = np.exp(m - m_new) * l + np.exp(sb - m_new).sum()
    acc = np.exp(m - m_new) * acc + np.exp(sb - m_new) @ vb
    m = m_new
    print(f"after keys {start}..{start + len(sb) - 1}: m = {m:.0f}, l = {l:.4f}, a = {acc}")
print("online: a / l =", acc / l)

# The reference computes softmax(q k^T * scale) v; q = s, k = I and scale = 1 give the same scores.
print("reference:     ", scaled_dot_product_attention(s[None], np.eye(5), v, scale=1.0)[0])

# A paged KV cache: two sequences of 5 and 3 tokens in blocks of S = 2 slots, the blocks shuffled in the pool.
from reference import paged_attention, repeat_kv_heads  # noqa: E402
from reference.paged_cache import to_paged  # noqa: E402

rng = np.random.default_rng(0)
lens = np.array([5, 3])
k, v = rng.standard_normal((2, 1, 5, 2)), rng.standard_normal((2, 1, 5, 2))  # (B, H_kv, T, d): row b holds lens[b]
k_cache, v_cache, table = to_paged(k, v, lens, 2, rng=rng)  # pool (N, H_kv, S, d), block_table (B, M)
print("block_table =", table.tolist(), " pool blocks:", k_cache.shape[0])
q = rng.standard_normal((2, 2, 1, 2))  # (B, H, L_q = 1, d): one decode step, 2 query heads share the K/V head
paged = paged_attention(q, k_cache, v_cache, table, lens)
for b, n in enumerate(lens):  # the same attention over each sequence's own contiguous tokens
    alone = scaled_dot_product_attention(q[b], repeat_kv_heads(k[b, :, :n], 2), repeat_kv_heads(v[b, :, :n], 2))
    print(f"sequence {b}: paged {paged[b, :, 0].ravel()}  contiguous {alone[:, 0].ravel()}")
