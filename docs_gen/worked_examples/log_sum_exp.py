"""Worked example: a row's log-sum-exp, a dead row's -inf, and two halves of the keys merged into the whole."""
import numpy as np

from reference import merge_attention, scaled_dot_product_attention

np.set_printoptions(precision=4, suppress=True)

# One query whose scaled scores against three keys are 0, 1 and 2 (q . k / sqrt(1) with q = 1).
q, k, v = np.ones((1, 1)), np.array([[0.0], [1.0], [2.0]]), np.array([[1.0], [2.0], [3.0]])
out, lse = scaled_dot_product_attention(q, k, v, return_lse=True)
print("lse =", lse)
print("by hand: log(e^0 + e^1 + e^2) =", round(float(np.log(1 + np.e + np.e ** 2)), 4))

# A query that sees no key: lse is -inf and the output 0.
out_dead, lse_dead = scaled_dot_product_attention(q, k, v, mask=np.zeros(3, dtype=bool), return_lse=True)
print("dead row: out =", out_dead[0], " lse =", lse_dead)

# Keys {0, 1} and {2} separately, then merged: the same as all three at once.
first = np.array([True, True, False])
out1, lse1 = scaled_dot_product_attention(q, k, v, mask=first, return_lse=True)
out2, lse2 = scaled_dot_product_attention(q, k, v, mask=~first, return_lse=True)
merged, merged_lse = merge_attention(out1, lse1, out2, lse2)
print("halves: out1 =", out1[0], " out2 =", out2[0])
print("weights exp(lse_k - lse) =", np.exp(lse1 - merged_lse), np.exp(lse2 - merged_lse))
print("merged =", merged[0], " whole =", out[0])
print("averaging instead would give", (out1[0] + out2[0]) / 2)
