"""Worked example: the analytic gradient of attention against finite differences; no gradient from the future."""
import numpy as np

from reference import scaled_dot_product_attention, scaled_dot_product_attention_backward

np.set_printoptions(precision=4, suppress=True)

rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((3, 2)) for _ in range(3))  # L = 3, d = 2


def loss(q, k, v):  # the sum of the causal output: dout is all ones
    return scaled_dot_product_attention(q, k, v, is_causal=True).sum()


dq, dk, dv = scaled_dot_product_attention_backward(np.ones((3, 2)), q, k, v, is_causal=True)
print("dv (analytic) =")
print(dv)

# Central differences on v, one entry at a time: (loss(v + h) - loss(v - h)) / 2h.
h, numeric = 1e-6, np.zeros_like(v)
for idx in np.ndindex(v.shape):
    e = np.zeros_like(v)
    e[idx] = h
    numeric[idx] = (loss(q, k, v + e) - loss(q, k, v - e)) / (2 * h)
print("dv (numeric) =")
print(numeric)

# Output row 0 sees only key 0: the gradient of out[0] reaches no later key or value.
dout0 = np.zeros((3, 2))
dout0[0] = 1.0
_, dk0, dv0 = scaled_dot_product_attention_backward(dout0, q, k, v, is_causal=True)
print("d out[0] / d k =")
print(dk0)
