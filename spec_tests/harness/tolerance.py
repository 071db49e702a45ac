"""The one tolerance model (DESIGN.md, "Comparing numbers").

* float64: the implementation must match the float64 oracle to about 1e-10,
  relative to the size of the values involved.
* float32 and lower: its error against the float64 oracle may be at most
  FACTOR times the error of the naive reference computed in the same dtype
  (the "yardstick"), plus a noise floor of a few units in the last place.
  This is FlashAttention's rule; PyTorch's SDPA tests use the same idea. It
  needs no hand-tuned constant per test: a harder input makes the yardstick
  err more, and the allowance grows with it.
* "Size" is the largest value involved. For attention it is max|V| times the
  largest possible score magnitude max_ij scale * sum_l |q_il| |k_jl|: rounding
  a score s perturbs its weight by about eps * |s|, so scores of 1e4 in float32
  (claim SDPA-5) make every implementation's output, and the naive one's, err
  by ~1e-3 |V| in ways that differ with the summation order.
* For multi-head attention it is the attention size of the projected heads, through |W_O|,
  plus |b_O| (tolerance.multi_head_size).
* For LayerNorm it is max|x| / sqrt(var + eps) times max|gamma|, plus max|beta|:
  the row mean's rounding (eps * max|x|) is divided by the row's spread.
* Relations between two results of the same implementation (permute, append a
  masked key, ...) allow RELATION_ULPS units in the last place of the dtype.
* Exact claims (zero weights, zeros for fully masked rows, raised errors) are
  asserted exactly, not through this module.

The yardstick is the reference code (`reference/`) run in the implementation's
dtype on the inputs rounded to that dtype: NumPy float32 natively; float16 and
bfloat16 emulated (`arrays.LowPrecision`: each operation accumulates in
float32 and stores its result rounded to the low precision, as PyTorch does).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spec_tests.harness.arrays import EPS, in_numpy_dtype, map_arrays

F64_RTOL = 1e-10  # float64 against the float64 oracle
FACTOR = 2.0  # low precision: at most this many times the yardstick's error ...
FLOOR_ULPS = 8.0  # ... plus this many units in the last place of the values' size
RELATION_ULPS = 64.0  # two results of one implementation that should agree


@dataclass(frozen=True)
class Bound:
    allowed: float
    rule: str


def magnitude(*arrays) -> float:
    """The size of the values involved: the largest finite |x| among the arrays (at least tiny)."""
    m = 0.0
    for a in arrays:
        a = np.asarray(a, dtype=np.float64)
        if a.size:
            finite = np.abs(a[np.isfinite(a)])
            if finite.size:
                m = max(m, float(finite.max()))
    return max(m, np.finfo(np.float64).tiny)


def attention_size(q, k, v=None, scale=None, bias=None) -> float:
    """max|V| (1 for weights) times max(1, the largest |score| the inputs allow, an additive bias included)."""
    q, k = np.abs(np.asarray(q, dtype=np.float64)), np.abs(np.asarray(k, dtype=np.float64))
    if scale is None:
        scale = 1.0 / np.sqrt(max(q.shape[-1], 1))
    scores = abs(scale) * (q @ np.swapaxes(k, -1, -2)) if q.size and k.size else np.zeros(1)
    largest = float(scores.max()) if scores.size else 0.0
    if bias is not None:
        largest += magnitude(bias)
    return (magnitude(v) if v is not None else 1.0) * max(1.0, largest)


def layer_norm_size(x, gamma, beta, eps=1e-5) -> float:
    """max over rows of max|x| / sqrt(var + eps), times max|gamma|, plus max|beta|.

    Computing a row's mean in the input's precision errs by about eps * max|x|; subtracting it and
    dividing by the row's spread makes that eps * max|x| / sqrt(var + eps) in the output: a row at
    -50 with spread 0.1 loses ~500 ulp in any backward-stable LayerNorm (PyTorch's own included),
    whichever summation order it uses.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return 1.0
    spread = np.sqrt(x.var(axis=-1) + float(eps))
    ratio = float(np.max(np.abs(x).max(axis=-1) / spread)) if np.all(spread > 0) else 1.0
    return max(1.0, ratio) * max(magnitude(gamma), 1e-300) + magnitude(beta)


def multi_head_size(query, key, value, weights, num_heads) -> float:
    """attention_size of the heads' projected inputs, through W_O, plus max|b_O|: the output can be far
    smaller than the values it is computed from (heads and b_O cancelling), and rounding errs relative
    to those. The projections are computed here in float64 (a key/value head serves H/G query heads).
    """
    f = lambda x: np.asarray(x, dtype=np.float64)  # noqa: E731
    w = {name: f(value_) for name, value_ in weights.items()}
    H = max(int(num_heads), 1)
    d_k = max(w["w_q"].shape[1] // H, 1)

    def heads(x, name):  # (..., L, D_x) -> (..., n, L, d_k)
        y = f(x) @ w[f"w_{name}"] + w.get(f"b_{name}", 0.0)
        n = max(y.shape[-1] // d_k, 1)
        return np.moveaxis(y.reshape(*y.shape[:-1], n, d_k), -2, -3)

    q, k, v = heads(query, "q"), heads(key, "k"), heads(value, "v")
    if k.shape[-3] != H:  # grouped-query attention: each key/value head serves H/G query heads
        k, v = (np.repeat(x, max(H // x.shape[-3], 1), axis=-3) for x in (k, v))
    size = attention_size(q, k, v)
    w_o = float(np.abs(w["w_o"]).sum(axis=0).max()) if w["w_o"].size else 0.0
    return size * max(w_o, 1e-300) + float(np.abs(w.get("b_o", 0.0)).max(initial=0.0))


def size_of(fname: str, args, kwargs) -> float | None:
    """The size of the values involved in fname(*args, **kwargs), where it is more than the result's."""
    if fname in ("scaled_dot_product_attention", "attention_weights") and len(args) >= 2:
        v = args[2] if fname == "scaled_dot_product_attention" and len(args) >= 3 else None
        return attention_size(args[0], args[1], v, kwargs.get("scale"), kwargs.get("bias"))
    if fname == "multi_head_attention" and len(args) >= 5 and isinstance(args[3], dict):
        try:
            return multi_head_size(*args[:5])
        except (KeyError, ValueError, IndexError):  # weights the oracle will reject anyway
            return None
    if fname == "layer_norm" and len(args) >= 3:
        eps = kwargs.get("eps", args[3] if len(args) > 3 else 1e-5)
        return layer_norm_size(args[0], args[1], args[2], eps)
    return None


def max_error(seen, expected) -> float:
    seen, expected = np.asarray(seen, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if seen.size == 0:
        return 0.0
    return float(np.max(np.abs(seen - expected)))


def yardstick(oracle_fn, args, kwargs, dtype: str):
    """The naive reference computed in `dtype` on the same (already rounded) inputs, as float64."""
    low_args = map_arrays(args, lambda a: in_numpy_dtype(a, dtype))
    low_kwargs = map_arrays(kwargs, lambda a: in_numpy_dtype(a, dtype))
    with np.errstate(all="ignore"):
        out = oracle_fn(*low_args, **low_kwargs)
    return map_arrays(out, lambda a: np.asarray(a).view(np.ndarray).astype(np.float64))


# --8<-- [start:oracle_bound]
def oracle_bound(dtype: str, expected, yard=None, scale: float | None = None) -> Bound:
    """How far an implementation in `dtype` may be from the float64 oracle's `expected`."""
    size = magnitude(expected) if scale is None else max(scale, magnitude(expected))
    if dtype == "float64":
        return Bound(F64_RTOL * size, f"float64: {F64_RTOL:g} x size {size:.3g}")
    eps = EPS[dtype]
    floor = FLOOR_ULPS * eps * size
    yard_err = max_error(yard, expected) if yard is not None else 0.0
    if not np.isfinite(yard_err):  # the naive reference overflows here: only the floor applies
        yard_err = 0.0
    return Bound(
        FACTOR * yard_err + floor,
        f"{dtype}: {FACTOR:g} x naive {dtype} error {yard_err:.3g} + floor {FLOOR_ULPS:g} ulp x size {size:.3g}",
    )
# --8<-- [end:oracle_bound]


# --8<-- [start:relation_bound]
def relation_bound(dtype: str, scale: float) -> Bound:
    """How far two results of one implementation may be apart when the math says they are equal."""
    if dtype == "float64":
        return Bound(F64_RTOL * scale, f"float64: {F64_RTOL:g} x size {scale:.3g}")
    return Bound(RELATION_ULPS * EPS[dtype] * scale, f"{dtype}: {RELATION_ULPS:g} ulp x size {scale:.3g}")
# --8<-- [end:relation_bound]
