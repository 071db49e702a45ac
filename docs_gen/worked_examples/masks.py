"""Worked example: causal masks for L_q != L_k, a padding mask, their AND, and a query that sees nothing."""
import numpy as np

from reference import attention_weights, causal_mask, padding_mask, scaled_dot_product_attention, visible

np.set_printoptions(precision=4, suppress=True)

# 2 queries against 4 keys: the queries are the last 2 positions (bottom-right).
print("causal_mask(2, 4) =")
print(causal_mask(2, 4).astype(int))
print("top-left (torch's is_causal) would be:")
print(np.tril(np.ones((2, 4), dtype=int)))

# Two sequences of 3 and 1 real tokens, padded to 4.
pad = padding_mask([3, 1], 4)
print("padding_mask([3, 1], 4).shape =", pad.shape)
print(pad[:, 0, 0, :].astype(int))

# padding AND causal, for the first sequence (L_q = L_k = 4).
print("visible(pad[0], causal) =")
print(visible(pad[0, 0], True, 4, 4).astype(int))

# More queries than keys under causal: query 0 sees no key, and its weights are exactly 0.
q, k = np.ones((3, 2)), np.ones((2, 2))
print("attention_weights(3 queries, 2 keys, causal) =")
print(attention_weights(q, k, is_causal=True))

# Poison at a padding key: NaN in its key and value. The weight there is exactly 0, but 0 * NaN = NaN,
# so P @ V alone would return NaN; the reference zeroes the values no query weighs first.
q, k, v = np.ones((2, 2)), np.array([[1.0, 0.0], [np.nan, np.nan]]), np.array([[3.0], [np.nan]])
pad = np.array([True, False])  # key 1 is padding
p = attention_weights(q, k, mask=pad)
print("weights with a NaN padding key =", p.tolist())
with np.errstate(invalid="ignore"):
    print("P @ V without zeroing          =", (p @ v).ravel())
print("scaled_dot_product_attention   =", scaled_dot_product_attention(q, k, v, mask=pad).ravel())
