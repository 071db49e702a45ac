"""A correct, plain NumPy implementation of the v1 contract: the mutants' common base.

Every function works in the dtype of its inputs (float64 or float32), never
writes to its inputs and is deterministic.  The work is split into small
helpers (`_masked_softmax`, `_causal_visible`, `_project`, `_moments`, ...) so
that a mutant can replace one helper and leave everything else as it is; see
`rewire` at the end of this file for how the replacement reaches the public
functions.
"""
import math
import numbers
import types

import numpy as np

BACKEND = "numpy"
DTYPES = ("float64", "float32")

__all__ = [
    "BACKEND",
    "DTYPES",
    "scaled_dot_product_attention",
    "attention_weights",
    "split_heads",
    "merge_heads",
    "multi_head_attention",
    "layer_norm",
    "sinusoidal_positional_encoding",
]


# ---------------------------------------------------------------------------
# Input checks.  Each raises ValueError with the offending values in the text.
# ---------------------------------------------------------------------------

def _require_ndim(name, a, ndim):
    if a.ndim < ndim:
        raise ValueError(f"{name} must have at least {ndim} dimensions, got shape {a.shape}")


def _require_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def _check_qk(q, k):
    _require_ndim("q", q, 2)
    _require_ndim("k", k, 2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same feature size d_k: q has {q.shape[-1]}, "
            f"k has {k.shape[-1]}")


def _check_lengths(k, v):
    _require_ndim("v", v, 2)
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same length L_k: k has {k.shape[-2]}, v has {v.shape[-2]}")


def _head_dim(d_model, num_heads):
    """d_k = d_model / num_heads, which must divide exactly."""
    num_heads = _require_int("num_heads", num_heads, 1)
    if d_model % num_heads != 0:
        raise ValueError(
            f"d_model={d_model} is not divisible by num_heads={num_heads}")
    return d_model // num_heads


def _batch_shape(**arrays):
    """The broadcast of the arrays' leading dims (all but the last two)."""
    try:
        return np.broadcast_shapes(*(a.shape[:-2] for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{name} {a.shape}" for name, a in arrays.items())
        raise ValueError(f"leading dimensions do not broadcast: {shapes}") from None


def _broadcast_mask(mask, shape):
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
    try:
        return np.broadcast_to(mask, shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {mask.shape} does not broadcast to the scores' shape {shape}"
        ) from None


# ---------------------------------------------------------------------------
# Scaled dot-product attention
# ---------------------------------------------------------------------------

def _default_scale(d_k):
    return 1.0 / math.sqrt(d_k)


def _scores(q, k, scale):
    return (q @ np.swapaxes(k, -1, -2)) * scale


def _causal_visible(L_q, L_k):
    """(L_q, L_k) bool: query i sees key j iff j <= i + (L_k - L_q) (bottom-right)."""
    i = np.arange(L_q)[:, None]
    j = np.arange(L_k)[None, :]
    return j <= i + (L_k - L_q)


def _visible(mask, is_causal, shape):
    """Boolean array of `shape`: True where a query may attend a key."""
    L_q, L_k = shape[-2:]
    visible = np.ones(shape, dtype=bool)
    if is_causal:
        visible = visible & _causal_visible(L_q, L_k)
    if mask is not None:
        visible = visible & _broadcast_mask(mask, shape)
    return visible


def _masked_softmax(scores, visible):
    """Softmax over the last axis using only visible entries; a row with none is all 0."""
    filled = np.where(visible, scores, -np.inf)
    row_max = filled.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0)   # rows with no visible key
    e = np.where(visible, np.exp(filled - row_max), 0)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1)


def attention_weights(q, k, mask=None, is_causal=False, scale=None):
    q, k = np.asarray(q), np.asarray(k)
    _check_qk(q, k)
    L_q, d_k = q.shape[-2:]
    L_k = k.shape[-2]
    shape = _batch_shape(q=q, k=k) + (L_q, L_k)
    visible = _visible(mask, bool(is_causal), shape)
    scale = _default_scale(d_k) if scale is None else float(scale)
    scores = np.broadcast_to(_scores(q, k, scale), shape)
    return _masked_softmax(scores, visible)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    _check_qk(q, k)
    _check_lengths(k, v)
    _batch_shape(q=q, k=k, v=v)
    return attention_weights(q, k, mask, is_causal, scale) @ v


# ---------------------------------------------------------------------------
# Multi-head attention
# ---------------------------------------------------------------------------

def split_heads(x, num_heads):
    """(..., L, D) -> (..., H, L, D/H); head h holds features h*d_k:(h+1)*d_k."""
    x = np.asarray(x)
    _require_ndim("x", x, 2)
    *lead, L, D = x.shape
    d_k = _head_dim(D, num_heads)
    return x.reshape(*lead, L, num_heads, d_k).swapaxes(-2, -3).copy()


def merge_heads(heads):
    """(..., H, L, d) -> (..., L, H*d): head h becomes features h*d:(h+1)*d."""
    heads = np.asarray(heads)
    _require_ndim("heads", heads, 3)
    *lead, H, L, d = heads.shape
    return heads.swapaxes(-2, -3).reshape(*lead, L, H * d)


def _check_mha(query, key, value, weights, num_heads):
    for name, a in (("query", query), ("key", key), ("value", value)):
        _require_ndim(name, a, 2)
    D = query.shape[-1]
    if key.shape[-1] != D or value.shape[-1] != D:
        raise ValueError(
            f"query, key and value must share d_model: got {D}, {key.shape[-1]}, {value.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"key and value must have the same length: key has {key.shape[-2]}, "
            f"value has {value.shape[-2]}")
    _head_dim(D, num_heads)
    for name in ("w_q", "w_k", "w_v", "w_o"):
        if name not in weights:
            raise ValueError(f"weights has no {name!r}")
        if np.shape(weights[name]) != (D, D):
            raise ValueError(f"{name} has shape {np.shape(weights[name])}, expected ({D}, {D})")
    for name in ("b_q", "b_k", "b_v", "b_o"):
        if weights.get(name) is not None and np.shape(weights[name]) != (D,):
            raise ValueError(f"{name} has shape {np.shape(weights[name])}, expected ({D},)")


def _project(x, weights, which):
    """y = x @ W + b in the math's orientation (W is (in, out))."""
    w = np.asarray(weights["w_" + which]).astype(x.dtype, copy=False)
    y = x @ w
    b = weights.get("b_" + which)
    if b is not None:
        y = y + np.asarray(b).astype(x.dtype, copy=False)
    return y


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
    query, key, value = np.asarray(query), np.asarray(key), np.asarray(value)
    _check_mha(query, key, value, weights, num_heads)
    q = split_heads(_project(query, weights, "q"), num_heads)
    k = split_heads(_project(key, weights, "k"), num_heads)
    v = split_heads(_project(value, weights, "v"), num_heads)
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
    return _project(merge_heads(heads), weights, "o")


# ---------------------------------------------------------------------------
# LayerNorm
# ---------------------------------------------------------------------------

def _check_affine(name, p, D, dtype):
    p = np.asarray(p)
    if p.shape != (D,):
        raise ValueError(f"{name} has shape {p.shape}, expected ({D},) to match x's last axis")
    return p.astype(dtype, copy=False)


def _moments(x):
    """Mean and biased (population) variance over the last axis, two-pass."""
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return mean, var


def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x)
    _require_ndim("x", x, 1)
    gamma = _check_affine("gamma", gamma, x.shape[-1], x.dtype)
    beta = _check_affine("beta", beta, x.shape[-1], x.dtype)
    mean, var = _moments(x)
    return gamma * (x - mean) / np.sqrt(var + float(eps)) + beta


# ---------------------------------------------------------------------------
# Sinusoidal positional encoding
# ---------------------------------------------------------------------------

def _angles(length, d_model):
    """(length, ceil(D/2)): angle[p, i] = p / 10000^(2i/D)."""
    position = np.arange(length, dtype=np.float64)[:, None]
    two_i = np.arange(0, d_model, 2, dtype=np.float64)
    return position / 10000.0 ** (two_i / d_model)


def sinusoidal_positional_encoding(length, d_model):
    length = _require_int("length", length, 0)
    d_model = _require_int("d_model", d_model, 1)
    angle = _angles(length, d_model)
    pe = np.zeros((length, d_model))
    pe[:, 0::2] = np.sin(angle)                       # even columns: sin
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])    # odd columns: cos, same frequency
    return pe


# ---------------------------------------------------------------------------
# For the mutants
# ---------------------------------------------------------------------------

def rewire(namespace):
    """Finish a mutant: make this module's functions use the mutant's replacements.

    `from impls.mutants._base import *` copies the public functions into a
    mutant, but each copy still looks names up in *this* module, so a mutant
    that replaces `_masked_softmax` would leave `attention_weights` correct.
    A mutant therefore ends with `_base.rewire(globals())`: every function of
    this module that the mutant did not replace is re-created with the
    mutant's namespace as its globals, and the remaining helpers and constants
    are copied in.  A bug planted in one helper then reaches every function
    that uses it, as it would in a hand-written buggy file.
    """
    for name, value in list(globals().items()):
        if name.startswith("__") or name == "rewire":
            continue
        if name in namespace and namespace[name] is not value:
            continue                                   # the mutant's own version wins
        if isinstance(value, types.FunctionType) and value.__module__ == __name__:
            clone = types.FunctionType(value.__code__, namespace, value.__name__,
                                       value.__defaults__, value.__closure__)
            clone.__kwdefaults__ = value.__kwdefaults__
            clone.__qualname__ = value.__qualname__
            clone.__doc__ = value.__doc__
            clone.__module__ = namespace.get("__name__", clone.__module__)
            value = clone
        namespace[name] = value
