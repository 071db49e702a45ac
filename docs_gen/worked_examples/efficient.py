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
