"""Worked example: masked softmax on a (2, 2, 4) input, then attention on a tiny Q, K, V."""
import numpy as np

from reference import attention_weights, masked_softmax, scaled_dot_product_attention

np.set_printoptions(precision=4, suppress=True)

# Scores of 2 sequences x 2 queries x 4 keys; sequence 0 has 2 real keys, sequence 1 has 3.
scores = np.array([[[0.5, 1.0, 2.0, 0.0],
                    [1.0, 1.0, 3.0, 3.0]],
                   [[0.0, 0.0, 0.0, 9.0],
                    [2.0, 1.0, 0.0, 0.0]]])
allowed = np.arange(4) < np.array([2, 3])[:, None, None]  # (2, 1, 4), broadcasts over queries
p = masked_softmax(scores, allowed)
print("P =")
print(p)
print("row sums:", p.sum(axis=-1).ravel())
# By hand, sequence 0, query 0: e^0.5 / (e^0.5 + e^1) = 1 / (1 + e^0.5).
print("by hand P[0, 0, 0] =", round(1 / (1 + np.exp(0.5)), 4))

# Attention: 2 queries, 3 keys, d_k = 2, d_v = 2; the scale is 1/sqrt(2).
q = np.array([[1.0, 0.0],
              [0.0, 4.0]])
k = np.array([[1.0, 0.0],
              [0.0, 1.0],
              [1.0, 1.0]])
v = np.array([[1.0, 0.0],
              [0.0, 10.0],
              [5.0, 5.0]])
out = scaled_dot_product_attention(q, k, v)
print("out =")
print(out)
# Query 1's scores are [0, 4, 4] / sqrt(2): keys 1 and 2 share almost all the weight,
# so its output is close to the mean of V's rows 1 and 2, (2.5, 7.5).

# Degenerate sizes: no keys (L_k = 0) makes every row dead, so the output is 0 of shape (L_q, d_v).
print("L_k = 0:", scaled_dot_product_attention(np.ones((2, 3)), np.ones((0, 3)), np.ones((0, 4))))
# A negative scale is used as given: the least similar key gets the most weight.
q1, k3 = np.array([[1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
print("weights, scale = +2:", attention_weights(q1, k3, scale=2.0).round(4))
print("weights, scale = -2:", attention_weights(q1, k3, scale=-2.0).round(4))
