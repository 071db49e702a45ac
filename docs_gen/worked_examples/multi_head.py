"""Worked example: split_heads and merge_heads on numbered features, then multi-head attention with W_O = I."""
import numpy as np

from reference import merge_heads, multi_head_attention, scaled_dot_product_attention, split_heads

np.set_printoptions(precision=4, suppress=True)

# One sequence of L = 2 tokens, D = 6 features numbered 0..5 (token 1: 10..15), H = 3 heads.
x = np.array([[[0.0, 1, 2, 3, 4, 5],
               [10, 11, 12, 13, 14, 15]]])  # (B, L, D) = (1, 2, 6)
heads = split_heads(x, 3)
print("split_heads(x, 3).shape =", heads.shape, "(B, H, L, d_k)")
print("head 1 =")
print(heads[0, 1])
print("merge_heads(split_heads(x)) == x:", np.array_equal(merge_heads(heads), x))

# Multi-head attention with identity projections: the output's column block h is head h's attention.
rng = np.random.default_rng(0)
x = rng.standard_normal((1, 3, 4))  # B = 1, L = 3, D = 4
eye = np.eye(4)
weights = {"w_q": eye, "w_k": eye, "w_v": eye, "w_o": eye}
out = multi_head_attention(x, x, x, weights, num_heads=2)
print("out.shape =", out.shape)
head_0 = scaled_dot_product_attention(x[..., 0:2], x[..., 0:2], x[..., 0:2])  # features 0, 1 only
print("out[..., 0:2] =")
print(out[0, :, 0:2])
print("head 0 alone =")
print(head_0[0])
