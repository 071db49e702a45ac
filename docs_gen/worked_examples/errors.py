"""Worked example: the messages bad input gets from the reference."""
import numpy as np

from reference import layer_norm, multi_head_attention, scaled_dot_product_attention

x = np.zeros((1, 2, 512))
weights = {name: np.eye(512) for name in ("w_q", "w_k", "w_v", "w_o")}
calls = {
    "D = 512, H = 7": lambda: multi_head_attention(x, x, x, weights, num_heads=7),
    "q (3, 4), k (5, 6)": lambda: scaled_dot_product_attention(np.ones((3, 4)), np.ones((5, 6)), np.ones((5, 6))),
    "k (5, 4), v (6, 4)": lambda: scaled_dot_product_attention(np.ones((3, 4)), np.ones((5, 4)), np.ones((6, 4))),
    "mask (4, 5) for scores (3, 5)": lambda: scaled_dot_product_attention(
        np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 4)), mask=np.ones((4, 5), dtype=bool)),
    "a float mask": lambda: scaled_dot_product_attention(
        np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 4)), mask=np.ones((3, 5))),
    "x (2, 8), gamma (7,)": lambda: layer_norm(np.ones((2, 8)), np.ones(7), np.zeros(8)),
}
for what, call in calls.items():
    try:
        call()
        print(f"{what}: no error (a bug)")
    except ValueError as err:
        print(f"{what}:\n    ValueError: {err}")

# Hygiene: inputs untouched, dtype kept, the same answer twice.
q = np.arange(6, dtype=np.float32).reshape(2, 3)
before = q.copy()
a = scaled_dot_product_attention(q, q, q)
b = scaled_dot_product_attention(q, q, q)
print("input unchanged:", np.array_equal(q, before), " dtype:", a.dtype, " repeatable:", np.array_equal(a, b))
