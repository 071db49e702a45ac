"""Worked example: float16's range and precision, and attention in float16 against float64."""
import numpy as np

from reference import scaled_dot_product_attention

np.set_printoptions(precision=4, suppress=True)

print("float16 max:", float(np.finfo(np.float16).max), " eps:", float(np.finfo(np.float16).eps))
with np.errstate(over="ignore"):
    print("np.float16(-1e9) =", np.float16(-1e9))  # the -1e9 mask fill is itself -inf
    print("exp(12) in float16 =", np.exp(np.float16(12.0)))  # e^12 > 65504 overflows
print("1 + 0.0004 in float16 =", np.float16(1) + np.float16(0.0004))  # below half an ulp: lost

rng = np.random.default_rng(0)
q, k, v = (rng.standard_normal((4, 8)) for _ in range(3))
exact = scaled_dot_product_attention(q, k, v)
for dtype in (np.float32, np.float16):
    out = scaled_dot_product_attention(q.astype(dtype), k.astype(dtype), v.astype(dtype))
    err, eps = np.abs(out - exact).max(), np.finfo(dtype).eps
    # The exact error depends on the CPU's exp() and summation order; its size does not.
    print(f"{np.dtype(dtype).name}: output dtype {out.dtype}, max error between eps/10 and 10 eps:",
          bool(eps / 10 < err < 10 * eps))
