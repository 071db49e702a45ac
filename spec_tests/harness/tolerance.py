"""The one tolerance model (the contract's "Comparing numbers"; docs/conventions.md states it, and
tests/test_tolerance_doc.py keeps the page equal to this module).

Against the float64 reference (`oracle_bound`, reached through `bound_against`), the largest error is

* float64: F64_RTOL x the size of the values involved (`size_of`: the output, or the larger values it
  is computed from, where rounding them errs relative to those).
* float32, float16, bfloat16:

      FACTOR x the yardstick's error  +  FLOOR_ULPS ulp x T  +  CARRIED_ULPS ulp x carried

  - the yardstick is the naive reference (`reference/`) computed in the implementation's dtype on the
    same rounded inputs (`yardstick`; float16/bfloat16 emulated by `arrays.LowPrecision`, each operation
    accumulated in float32 and stored rounded, as PyTorch does). It carries every conditioning effect:
    scores of 1e4 in float32 (SDPA-5), a row mean of 1e5 in LayerNorm (LN-7), heads cancelling.
  - T (`terms_size`) is the magnitude of the terms whose sum is the expected output (|P||V| for
    attention, ...; max|expected| otherwise, never less). It is the output's own scale, never a worst
    case of the inputs: an all-zero output fails in every dtype unless the output is a cancellation
    below FLOOR_ULPS ulp of its own terms.
  - carried (`carried_size`) is LayerNorm's row mean over its spread: every implementation stores the
    mean and is off by about an ulp of it, each in its own direction.

Between two results of one implementation that the math says are equal (`relation_bound`):
RELATION_ULPS[dtype] ulp x the size of the values involved, derived per dtype (`relation_ulps`).

Precision reached (`precision_step`, PREC-3): a float64 call whose error is above F64_RTOL's allowance, at least
FLOAT32_STEP_ULPS float32 ulp of its output's terms and within the rule of float32, float16 or bfloat16 ran some
step in the most precise of those whose rule holds it (the scores, the softmax, LayerNorm's statistics, RoPE's
angles, the output). PREC-3 fails it, once; every other claim then judges that implementation by that dtype's
rule and says so (carried.py). An error beyond bfloat16's rule is no precision step: it is the failure of its
own claim.

A function without an input array (the sinusoidal encoding) is compared at the most precise dtype
the implementation declares (`required_dtype`); it does not choose its own slack by the dtype it
returns. Exact claims (zero weights, zeros for fully masked rows, raised errors, integer buckets)
are asserted exactly, not through this module.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spec_tests.harness.arrays import EPS, in_numpy_dtype, map_arrays, round_trip

F64_RTOL = 1e-10  # float64 against the float64 reference, relative to the size of the values involved
FACTOR = 4.0  # float32 and lower: at most this many times the yardstick's error ...
FLOOR_ULPS = 4.0  # ... plus this many units in the last place of the expected output's terms ...
CARRIED_ULPS = 2.0  # ... plus this many of a value every implementation stores and the yardstick may miss

# Relations: a result stored in a dtype carries the rounding of its last few stored operations
# (ROUNDINGS of half an ulp of the dtype, at most one ulp each way) and of the sums behind them,
# which PyTorch and NumPy accumulate in float32 for float32, float16 and bfloat16 alike
# (ACCUMULATOR); a sum of n terms errs by up to n ulp of the accumulator. Two results may differ by
# both their errors: 2 x (ROUNDINGS + TERMS x eps(accumulator) / eps(dtype)) ulp of the dtype.
ROUNDINGS = 4  # scores, weights, output, and the changed input of the second call
TERMS = 28  # float32 accumulation budget of one value (float32 keeps the 64 ulp its relations have needed)
ACCUMULATOR = "float32"
PRECISION_ORDER = ("float64", "float32", "float16", "bfloat16")  # most precise first


def relation_ulps(dtype: str) -> float:
    """Units in the last place of `dtype` two results of one implementation may differ by."""
    return 2.0 * (ROUNDINGS + TERMS * EPS[ACCUMULATOR] / EPS[dtype])


RELATION_ULPS = {d: relation_ulps(d) for d in ("float32", "float16", "bfloat16")}


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


# ------------------------------------------------------------------------------- sizes of the values involved

def lse_size(lse) -> float:
    """A log-sum-exp's size: its largest finite |value| (each row's log of its softmax denominator is stored
    rounded, off by an ulp of itself; a dead row's -inf is compared exactly, not through a bound)."""
    return magnitude(lse)

def attention_size(q, k, v=None, scale=None, bias=None) -> float:
    """max|V| (1 for weights) times max(1, the largest |score| the inputs allow, an additive bias included).

    Rounding a score s perturbs its weight by about eps * |s|: in float64 this is what limits any
    implementation, and relations between two results of one implementation (whose scores are
    rounded differently) inherit it."""
    q, k = np.abs(np.asarray(q, dtype=np.float64)), np.abs(np.asarray(k, dtype=np.float64))
    if scale is None:
        scale = 1.0 / np.sqrt(max(q.shape[-1], 1))
    scores = abs(scale) * (q @ np.swapaxes(k, -1, -2)) if q.size and k.size else np.zeros(1)
    largest = float(scores.max()) if scores.size else 0.0
    if bias is not None:
        largest += magnitude(bias)
    return (magnitude(v) if v is not None else 1.0) * max(1.0, largest)


def attention_output_size(v) -> float:
    """max|V|: each output row is a weighted mean of V's rows (weights >= 0 summing to at most 1), so
    two evaluation orders of it round terms of at most this size."""
    return magnitude(v)


def dropout_size(dropout_p: float, v=None) -> float:
    """max|V| (1 for the weights) / (1 - p): weights lie in [0, 1] and dropout scales each kept one by
    1 / (1 - p), so the dropped weights and P' V round terms up to this size (p = 0: the plain weights)."""
    return (magnitude(v) if v is not None else 1.0) / (1.0 - float(dropout_p))


def unchanged_size(result) -> float:
    """max|result| of the call without the keyword: a keyword that must change nothing (dropout_p while
    not training) leaves the computation as it was, so the two results differ only by their own rounding.
    (multi_head_size would let an all-zero bfloat16 output pass such a relation.)"""
    return magnitude(result)


def layer_norm_size(x, gamma, beta, eps=1e-5) -> float:
    """max over rows of max|x| / sqrt(var + eps), times max|gamma|, plus max|beta|.

    Computing a row's mean in the input's precision errs by about eps * max|x|; subtracting it and
    dividing by the row's spread makes that eps * max|x| / sqrt(var + eps) in the output.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return 1.0
    spread = np.sqrt(x.var(axis=-1) + float(eps))
    ratio = float(np.max(np.abs(x).max(axis=-1) / spread)) if np.all(spread > 0) else 1.0
    return max(1.0, ratio) * max(magnitude(gamma), 1e-300) + magnitude(beta)


def layer_norm_mean_size(x, gamma, eps=1e-5) -> float:
    """max over rows of |mean| / sqrt(var + eps), times max|gamma|: the row mean is a number stored in the
    dtype, off by about eps * |mean| in any implementation that stores it (in a different way in each),
    and normalising divides that by the row's spread. It is 0 for rows centred at 0."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return 0.0
    spread = np.sqrt(x.var(axis=-1) + float(eps))
    if not np.all(spread > 0):
        return 0.0
    return float(np.max(np.abs(x.mean(axis=-1)) / spread)) * magnitude(gamma)


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


def rope_size(x, positions, base=10000.0) -> float:
    """max|x| times the largest angle (θ_0 = 1): rounding an angle a moves the output by ~eps·|a|·|x|."""
    return magnitude(x) * max(1.0, float(np.abs(np.asarray(positions)).max(initial=0)))


def rope_scores_size(q, k, largest_position) -> float:
    """Scores <rope(q, m), rope(k, n)>: the largest |q|_1 |k|_1 times the largest angle (θ_0 = 1)."""
    q, k = np.abs(np.asarray(q, dtype=np.float64)), np.abs(np.asarray(k, dtype=np.float64))
    return float(q.sum(axis=-1).max() * k.sum(axis=-1).max()) * max(1.0, float(largest_position))


def angle_size(length: int) -> float:
    """The largest angle p·ω_0 = length - 1 of the sinusoidal encoding (at least 1)."""
    return float(max(int(length), 1))


def layer_norm_backward_size(dy, x, gamma, eps=1e-5) -> float:
    """How large the terms of LayerNorm's gradients get: rows·|dy|·|x̂| for dgamma, |dy|·|gamma|/σ for dx."""
    dy, x, gamma = (np.asarray(a, dtype=np.float64) for a in (dy, x, gamma))
    centred = x - x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt((centred**2).mean(axis=-1) + eps)
    rows = max(dy.size // max(dy.shape[-1], 1), 1)
    x_hat = float(np.abs(centred).max() / sigma.min()) if x.size else 0.0
    return float(np.abs(dy).max(initial=0)) * (rows * (1.0 + x_hat) + 3.0 * float(np.abs(gamma).max()) / float(sigma.min()))


def attention_backward_size(dout, q, k, v, scale=None) -> float:
    """How large the terms of attention's gradients get (the backward analogue of attention_size):
    A = d_v·|dout|·|v| bounds dP; dq ~ 2A·scale·|k|, dk ~ 2A·scale·|q|·L_q, dv ~ L_q·|dout|; times the largest
    |score|, since rounding a score s moves its weight by ~eps·|s|."""
    q, k, v, dout = (np.asarray(a, dtype=np.float64) for a in (q, k, v, dout))
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    m = lambda a: float(np.abs(a).max(initial=0))  # noqa: E731
    L_q, d_v = q.shape[-2], v.shape[-1]
    a = d_v * m(dout) * m(v)
    terms = max(2 * a * scale * m(k), 2 * a * scale * m(q) * L_q, L_q * m(dout))
    return terms * attention_size(q, k, None, scale) + np.finfo(float).tiny


def terms_size(fname: str, args, kwargs, expected) -> float:
    """The magnitude of the terms whose sum is the expected output (the low-precision floor's scale): for
    attention the largest entry of |P| |V|, for multi-head attention of (|P| |V_h| merged) |W_O| + |b_O|, for
    LayerNorm of |gamma| |x_hat| + |beta|; max|expected| for other functions, and never less than it.
    A sum that cancels to a small result still rounds its terms, in every summation order."""
    own = magnitude(*expected) if isinstance(expected, tuple) else magnitude(expected)
    try:
        with np.errstate(all="ignore"):
            terms = _terms(fname, args, kwargs)
    except (KeyError, ValueError, IndexError, TypeError):  # inputs the reference rejects anyway
        return own
    return own if terms is None else max(own, magnitude(terms))


def _terms(fname, args, kwargs):
    ref = _reference()
    f = lambda x: np.asarray(x, dtype=np.float64)  # noqa: E731
    attention_keys = ("mask", "is_causal", "scale", "bias")
    if fname == "scaled_dot_product_attention" and len(args) >= 3:
        p = ref.attention_weights(f(args[0]), f(args[1]), **{k: kwargs[k] for k in attention_keys if k in kwargs})
        return np.abs(p) @ np.abs(f(args[2]))
    if fname == "multi_head_attention" and len(args) >= 5 and isinstance(args[3], dict):
        from reference.multi_head import multi_head_attention_from

        # the reference's multi-head attention with |P| |V_h| for each head and |W_O|, |b_O| for the output map
        query, key, value, w, H = f(args[0]), f(args[1]), f(args[2]), {n: f(a) for n, a in args[3].items()}, int(args[4])
        w.update({n: np.abs(w[n]) for n in ("w_o", "b_o") if n in w})
        keys = {n: kwargs[n] for n in ("mask", "is_causal", "num_kv_heads") if n in kwargs}
        return multi_head_attention_from(query, key, value, w, H, **keys, scaled_dot_product_attention=_terms_of_heads)
    if fname == "layer_norm" and len(args) >= 3:
        x, eps = f(args[0]), float(kwargs.get("eps", args[3] if len(args) > 3 else 1e-5))
        x_hat = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + eps)
        return np.abs(x_hat) * np.abs(f(args[1])) + np.abs(f(args[2]))
    if fname == "scaled_dot_product_attention_backward" and len(args) >= 4:
        dout, q, k, v = (np.abs(f(a)) for a in args[:4])
        keys = {n: kwargs[n] for n in ("mask", "is_causal", "scale") if n in kwargs}
        p = ref.attention_weights(f(args[1]), f(args[2]), **keys)  # (..., L_q, L_k)
        scale = abs(float(kwargs.get("scale") or 1.0 / np.sqrt(max(q.shape[-1], 1))))
        dp = dout @ np.swapaxes(v, -1, -2)  # the terms of dP = dO V^T
        ds = p * (dp + (p * dp).sum(axis=-1, keepdims=True))  # of dS = P (dP - rowsum(P dP))
        t = [scale * ds @ k, scale * np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ dout]  # dq, dk, dv
        return np.array([magnitude(a) for a in t])
    return None


def _terms_of_heads(q, k, v, mask=None, is_causal=False):
    """|P| |V| in place of attention's P V: the magnitude of the terms each head's output sums."""
    p = _reference().attention_weights(q, k, mask=mask, is_causal=is_causal)
    return np.abs(p) @ np.abs(v)


def score_sensitivity_size(q, k, v=None, mask=None, is_causal=False, scale=None, bias=None) -> float:
    """How far the output moves when every score s_ij is off by eps * |s_ij| (scores are stored, in some
    precision, by every implementation): max over rows and columns of sum_j p_ij |s_ij| |v_j - out_i|
    (for the weights themselves, p_ij (|s_ij| + sum_l p_il |s_il|)). Small where one key dominates."""
    ref = _reference()
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    scale = 1.0 / np.sqrt(max(q.shape[-1], 1)) if scale is None else float(scale)
    p = ref.attention_weights(q, k, mask=mask, is_causal=is_causal, scale=scale, bias=bias)
    s = scale * (q @ np.swapaxes(k, -1, -2)) + (0.0 if bias is None else np.asarray(bias, dtype=np.float64))
    ps = np.where(p > 0, p * np.abs(np.where(np.isfinite(s), s, 0.0)), 0.0)  # (..., L_q, L_k)
    if v is None:
        return magnitude(ps + p * ps.sum(axis=-1, keepdims=True))
    v = np.asarray(v, dtype=np.float64)
    out = p @ v  # (..., L_q, d_v)
    spread = np.abs(v[..., None, :, :] - out[..., :, None, :])  # (..., L_q, L_k, d_v)
    return magnitude(np.einsum("...ij,...ijd->...id", ps, spread))


def normaliser_size(q, k, v=None, mask=None, is_causal=False, scale=None, bias=None) -> float:
    """How far the output moves when each row's stored normaliser (its log-sum-exp m + log sum_j e^(s_j - m),
    kept by a log-sum-exp softmax and by FlashAttention's kernels) is off by eps * |m|: every weight of the row
    is scaled by 1 + eps |m|, so the row's output by as much: max over rows of |m_i| x max_d (|P| |V|)_id
    (p_ij for the weights). A row where one key takes all the weight has log sum = 0 and nothing to round:
    the term fades with 1 - max_j p_ij below 2^-24."""
    ref = _reference()
    q, k = np.asarray(q, dtype=np.float64), np.asarray(k, dtype=np.float64)
    scale = 1.0 / np.sqrt(max(q.shape[-1], 1)) if scale is None else float(scale)
    p = ref.attention_weights(q, k, mask=mask, is_causal=is_causal, scale=scale, bias=bias)
    s = scale * (q @ np.swapaxes(k, -1, -2)) + (0.0 if bias is None else np.asarray(bias, dtype=np.float64))
    s = np.broadcast_to(s, p.shape)
    m = np.where(p > 0, np.abs(np.where(np.isfinite(s), s, 0.0)), 0.0).max(axis=-1, initial=0.0)  # (..., L_q)
    shared = np.clip((1.0 - p.max(axis=-1, initial=0.0)) * 2.0**24, 0.0, 1.0)  # 0 when one key takes all
    terms = p if v is None else np.abs(p) @ np.abs(np.asarray(v, dtype=np.float64))  # (..., L_q, d)
    return magnitude((m * shared)[..., None] * terms) if terms.size else 0.0


def rope_angle_size(x, positions, base=10000.0) -> float:
    """How far RoPE's output moves when each angle m·θ_i is off by one rounding of itself: max over rows and
    pairs of |m θ_i| x |(x_2i, x_2i+1)|. Charged at float32's ulp (an angle computed in float32 or better):
    an angle computed in float16 or bfloat16 is off by whole radians and stays a failure."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    if x.size == 0 or d < 2:
        return 0.0
    theta = float(base) ** (-np.arange(0, d - 1, 2, dtype=np.float64) / d)  # (d/2,)
    angle = np.abs(np.asarray(positions, dtype=np.float64))[..., None] * theta  # (..., L, d/2)
    pair = np.hypot(x[..., 0:d - 1:2], x[..., 1::2])  # (..., L, d/2)
    return magnitude(angle * pair)


def layer_norm_backward_mean_size(dy, x, gamma, eps=1e-5) -> float:
    """LayerNorm's stored row mean, through the backward pass: a mean off by eps |mean| shifts x_hat by
    δ = eps |mean| / σ, which moves dx by about |g| / σ (1 + 2 max|x_hat|) δ (g = dy gamma) and dgamma by
    rows |dy| δ. This returns that size over eps."""
    dy, x, gamma = (np.asarray(a, dtype=np.float64) for a in (dy, x, gamma))
    if x.size == 0:
        return 0.0
    centred = x - x.mean(axis=-1, keepdims=True)
    sigma = np.sqrt((centred**2).mean(axis=-1, keepdims=True) + float(eps))  # (..., 1)
    shift = np.abs(x.mean(axis=-1, keepdims=True)) / sigma  # (..., 1): δ / eps
    x_hat = float(np.abs(centred / sigma).max())
    g = np.abs(dy * gamma).max(axis=-1, keepdims=True)  # (..., 1)
    rows = max(dy.size // max(dy.shape[-1], 1), 1)
    dx = float((g / sigma * shift).max()) * (1.0 + 2.0 * x_hat)
    return max(dx, rows * float(np.abs(dy).max()) * float(shift.max()))


def carried_size(fname: str, args, kwargs, dtype: str | None = None) -> float:
    """A size whose one-ulp error every implementation carries and the yardstick may happen to miss
    (the low-precision bound's third term): LayerNorm's stored row mean (in its backward pass too),
    attention's stored scores and row normaliser, RoPE's angles; the last two at float32's ulp whatever
    `dtype` (the implementation's) is, since a kernel in float16 or bfloat16 keeps them in float32 (their
    share here is scaled by eps(float32) / eps(dtype)); 0 for other functions."""
    if fname == "layer_norm" and len(args) >= 2:
        return layer_norm_mean_size(args[0], args[1], kwargs.get("eps", args[3] if len(args) > 3 else 1e-5))
    if fname == "layer_norm_backward" and len(args) >= 3:
        return layer_norm_backward_mean_size(*args[:3], kwargs.get("eps", args[3] if len(args) > 3 else 1e-5))
    if fname in ("rotary_embedding", "rotary_embedding_half_split") and len(args) >= 2:
        x = np.asarray(args[0], dtype=np.float64)
        if fname == "rotary_embedding_half_split" and x.shape[-1] % 2 == 0:  # pairs (i, i + d/2): interleave them
            x = x[..., _reference().half_split_permutation(x.shape[-1])]
        scale = EPS["float32"] / EPS[dtype] if dtype in EPS and dtype != "float64" else 1.0
        return rope_angle_size(x, args[1], kwargs.get("base", args[2] if len(args) > 2 else 10000.0)) * scale
    if fname in ("scaled_dot_product_attention", "attention_weights") and len(args) >= 2:
        v = args[2] if fname == "scaled_dot_product_attention" and len(args) >= 3 else None
        keys = {n: kwargs[n] for n in ("mask", "is_causal", "scale", "bias") if n in kwargs}
        try:
            with np.errstate(all="ignore"):
                wide = EPS["float32"] / EPS[dtype] if dtype in EPS and dtype != "float64" else 1.0  # kept in float32
                return score_sensitivity_size(args[0], args[1], v, **keys) + wide * normaliser_size(args[0], args[1], v, **keys)
        except (ValueError, IndexError, TypeError):
            return 0.0
    return 0.0


def size_of(fname: str, args, kwargs) -> float | None:
    """The size of the values involved in fname(*args, **kwargs), where it is more than the result's."""
    if fname in ("scaled_dot_product_attention", "attention_weights") and len(args) >= 2:
        v = args[2] if fname == "scaled_dot_product_attention" and len(args) >= 3 else None
        return attention_size(args[0], args[1], v, kwargs.get("scale"), kwargs.get("bias"))
    if fname == "multi_head_attention" and len(args) >= 5 and isinstance(args[3], dict):
        try:
            return multi_head_size(*args[:5])
        except (KeyError, ValueError, IndexError):  # weights the reference will reject anyway
            return None
    if fname == "layer_norm" and len(args) >= 3:
        eps = kwargs.get("eps", args[3] if len(args) > 3 else 1e-5)
        return layer_norm_size(args[0], args[1], args[2], eps)
    if fname in ("rotary_embedding", "rotary_embedding_half_split") and len(args) >= 2:
        return rope_size(args[0], args[1])
    if fname == "layer_norm_backward" and len(args) >= 3:
        return layer_norm_backward_size(args[0], args[1], args[2], kwargs.get("eps", 1e-5))
    if fname == "scaled_dot_product_attention_backward" and len(args) >= 4:
        return attention_backward_size(*args[:4], kwargs.get("scale"))
    return None


# ------------------------------------------------------------------------------- the yardstick
def max_error(seen, expected) -> float:
    seen, expected = np.asarray(seen, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if seen.size == 0:
        return 0.0
    with np.errstate(invalid="ignore"):
        err = np.abs(seen - expected)
    err = err[np.isfinite(expected)]
    return float(np.max(err)) if err.size else 0.0


def yardstick(oracle_fn, args, kwargs, dtype: str):
    """The naive reference computed in `dtype` on the same (already rounded) inputs, as float64."""
    low_args = map_arrays(args, lambda a: in_numpy_dtype(a, dtype))
    low_kwargs = map_arrays(kwargs, lambda a: in_numpy_dtype(a, dtype))
    with np.errstate(all="ignore"):
        out = oracle_fn(*low_args, **low_kwargs)
    return map_arrays(out, lambda a: np.asarray(a).view(np.ndarray).astype(np.float64))


# ------------------------------------------------------------------------------- bounds
# --8<-- [start:oracle_bound]
def oracle_bound(dtype: str, expected, yard=None, size: float | None = None, own: float | None = None,
                 carried: float = 0.0, naive_error: float | None = None) -> Bound:
    """How far an implementation in `dtype` may be from the float64 reference's `expected`.

    float64: F64_RTOL x size (size: the values involved, at least max|expected|).
    lower:   FACTOR x the yardstick's error + FLOOR_ULPS ulp x own + CARRIED_ULPS ulp x carried.
    (`own`: terms_size, the magnitude of the terms whose sum is `expected`, at least max|expected|;
    `carried`: carried_size, LayerNorm's row mean over its spread.)"""
    own = magnitude(expected) if own is None else max(own, magnitude(expected))
    if dtype == "float64":
        size = own if size is None else max(size, own)
        return Bound(F64_RTOL * size, f"float64: {F64_RTOL:g} x size {size:.3g}")
    floor = FLOOR_ULPS * EPS[dtype] * own + CARRIED_ULPS * EPS[dtype] * carried
    yard_err = max_error(yard, expected) if yard is not None else (naive_error or 0.0)
    if not np.isfinite(yard_err):  # the naive reference overflows here: only the floor applies
        yard_err = 0.0
    rule = f"{dtype}: {FACTOR:g} x naive {dtype} error {yard_err:.3g} + floor {FLOOR_ULPS:g} ulp x output terms {own:.3g}"
    if carried:
        rule += f" + {CARRIED_ULPS:g} ulp x carried {carried:.3g}"
    return Bound(FACTOR * yard_err + floor, rule)
# --8<-- [end:oracle_bound]


# --8<-- [start:relation_bound]
def relation_bound(dtype: str, size: float) -> Bound:
    """How far two results of one implementation may be apart when the math says they are equal."""
    if dtype == "float64":
        return Bound(F64_RTOL * size, f"float64: {F64_RTOL:g} x size {size:.3g}")
    ulps = RELATION_ULPS[dtype]
    return Bound(ulps * EPS[dtype] * size, f"{dtype}: {ulps:.3g} ulp x size {size:.3g}")
# --8<-- [end:relation_bound]


def bound_against(dtype: str, oracle_fn, r_args, r_kwargs, expected, fname: str | None = None, last=None):
    """oracle_bound for `expected = oracle_fn(*r_args, **r_kwargs)` (inputs already rounded to `dtype`),
    its yardstick computed here; one Bound per result when the function returns a tuple.

    `last`: (fname, args) of the contract function a composite `oracle_fn` ends with, applied to the
    float64 values it receives there (e.g. the LayerNorm that ends a Post-LN block): the output terms and
    the carried term are that function's."""
    yard = None if dtype == "float64" else yardstick(oracle_fn, r_args, r_kwargs, dtype)
    fname = fname or oracle_fn.__name__
    size, carried = size_of(fname, r_args, r_kwargs), carried_size(fname, r_args, r_kwargs, dtype)
    own = terms_size(fname, r_args, r_kwargs, expected)
    if last is not None:
        carried = max(carried, carried_size(last[0], last[1], {}))
        own = max(own, terms_size(last[0], last[1], {}, expected))
    if isinstance(expected, tuple):  # gradients with respect to every input: one loss, one scale
        yards = yard if yard is not None else [None] * len(expected)
        return tuple(oracle_bound(dtype, e, y, size, own, carried) for e, y in zip(expected, yards))
    return oracle_bound(dtype, expected, yard, size, own, carried)


# ------------------------------------------------------------------------------- precision reached (PREC-3)
# --8<-- [start:float32_step]
# A float64 call with a lower-precision step inside (scores, softmax, LayerNorm's statistics, RoPE's angles or the
# output kept in float32, float16 or bfloat16) errs far more than float64 allows: PREC-3 pays for it, once, and
# every other claim judges that implementation by the rule of the precision it reached (carried.py).
FLOAT32_STEP_ULPS = 1.0 / 16  # "far above float64's": at least this many float32 ulp of the output's terms
STEP_PRECISIONS = ("float32", "float16", "bfloat16")  # the precisions a step may reach, most precise first


def float32_step(err: float, float64_allowed: float, float32_allowed: float, terms: float) -> bool:
    """Does a float64 call's error show a float32 step? Above float64's allowance, at least FLOAT32_STEP_ULPS
    float32 ulp of the output's terms (`terms_size`), and within the float32 rule."""
    return float64_allowed < err <= float32_allowed and err >= FLOAT32_STEP_ULPS * EPS["float32"] * terms


def precision_step(err: float, float64_allowed: float, allowed_at, terms: float) -> str | None:
    """The precision a float64 call's error shows it reached: the most precise of STEP_PRECISIONS whose rule
    (`allowed_at(dtype)`, the bound at that dtype) holds the error while the error is at least FLOAT32_STEP_ULPS
    ulp of that dtype of the output's terms (of its size, as float32_step asks of float32); None when the error
    is within float64's allowance or fits no precision's size and rule (then it is no precision step, but the
    failure of its own claim: an error of 1e-6 is neither float32's nor float16's)."""
    if err <= float64_allowed:
        return None
    return next((dtype for dtype in STEP_PRECISIONS
                 if FLOAT32_STEP_ULPS * EPS[dtype] * terms <= err <= allowed_at(dtype)), None)


# --8<-- [end:float32_step]


def carried_bound(dtype: str, oracle_fn, r_args, r_kwargs, expected, built, fname: str) -> Bound:
    """The bound for a result judged against `built` (the implementation's own parts composed the way the math
    says, carried.py) instead of the reference's `expected`: the rounding the reference computation allows
    (bound_against), plus its floor on the scale of the built values, which a bug elsewhere may have made larger."""
    bound = bound_against(dtype, oracle_fn, r_args, r_kwargs, expected, fname)
    built_size = magnitude(built)
    extra = (F64_RTOL if dtype == "float64" else FLOOR_ULPS * EPS[dtype]) * built_size
    return Bound(bound.allowed + extra, f"{bound.rule} + the same on the built values' size {built_size:.3g}")


# --8<-- [start:required_dtype]
def required_dtype(declared) -> str:
    """The precision a function without an input array is held to: the most precise dtype declared."""
    declared = [d for d in PRECISION_ORDER if d in tuple(declared)]
    return declared[0] if declared else "float64"
# --8<-- [end:required_dtype]


def less_precise(seen: str, required: str) -> bool:
    """Is a result in dtype `seen` less precise than `required`?"""
    return EPS.get(seen, 0.0) > EPS[required]


def positional_bound(dtype: str, expected, length: int, d_model: int) -> Bound:
    """The sinusoidal encoding against the reference. Its naive error is known in closed form: the angle
    p·ω_i, with ω_i and the product each stored in float32, is off by up to eps·p·ω_i (ω_0 = 1), and sin/cos
    move by as much; so the naive error is eps x the largest angle (angle_size), with float32's eps for
    float32 and lower. An angle computed in float16 or bfloat16 is off by radians at a few hundred positions
    (a wrong base, 10240, moves the encoding by less): the encoding is computed in float32 or better and
    only its values stored in the lower dtype, as for RoPE's angles (rope_angle_size)."""
    angle_eps = EPS[dtype] if dtype == "float64" else EPS["float32"]
    return oracle_bound(dtype, expected, None, angle_size(length), naive_error=angle_eps * angle_size(length - 1))


def float32_statistics_bound(dtype: str, expected, r_args) -> Bound:
    """Low-precision LayerNorm (LN-7): the yardstick is the reference computed in float32 (statistics kept in
    float32, as PyTorch's kernels do) with its output stored in `dtype`."""
    yard = round_trip(yardstick(_reference().layer_norm, r_args, {}, "float32"), dtype)
    return oracle_bound(dtype, expected, yard, size_of("layer_norm", r_args, {}))  # float32's mean: no carried term


def _reference():
    import reference

    return reference


def finite_difference_bound(dtype: str, numerical, yard, size: float, fd_rtol: float) -> Bound:
    """A gradient against central differences of the float64 reference: the reference bound, plus the
    differences' own error fd_rtol x the size of the values involved."""
    size = max(magnitude(numerical), size or 0.0) + 1.0
    bound = oracle_bound(dtype, numerical, yard, size)
    return Bound(bound.allowed + fd_rtol * size, bound.rule + f" + finite-difference error {fd_rtol:g} x size {size:.3g}")
