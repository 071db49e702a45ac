"""A correct, plain NumPy implementation of the contract: the mutants' common base.

It covers v1 and the later chapters' extensions (CONTRACT.md): `bias=` on attention,
`num_kv_heads=` (grouped-query attention), `rotary_embedding`, `t5_relative_position_bucket`
and the two backward passes.

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
    "rotary_embedding",
    "t5_relative_position_bucket",
    "layer_norm_backward",
    "scaled_dot_product_attention_backward",
    "merge_attention",
    "paged_attention",
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


def _window_extents(window_size):
    """(left, right) of window_size=(left, right), each an int >= 0 or None (no limit)."""
    try:
        left, right = window_size
    except (TypeError, ValueError):
        raise ValueError(f"window_size must be a pair (left, right), got {window_size!r}") from None
    for w in (left, right):
        if w is not None and (isinstance(w, bool) or not isinstance(w, numbers.Integral) or w < 0):
            raise ValueError(f"window_size's extents must be ints >= 0 or None, got {window_size!r}")
    return left, right


def _window_visible(L_q, L_k, window_size):
    """(L_q, L_k) bool: -left <= j - (i + L_k - L_q) <= right, the window bottom-right aligned like causal."""
    left, right = _window_extents(window_size)
    centre = np.arange(L_q)[:, None] + (L_k - L_q)
    j = np.arange(L_k)[None, :]
    ok = np.ones((L_q, L_k), dtype=bool)
    if left is not None:
        ok = ok & (j >= centre - left)
    if right is not None:
        ok = ok & (j <= centre + right)
    return ok


def _segment_ids(ids, L, name):
    ids = np.asarray(ids)
    if ids.ndim < 1 or ids.shape[-1] != L or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{name} must be integers of shape (..., {L}), got {ids.dtype} of shape {ids.shape}")
    return ids


def _document_visible(q_segment_ids, kv_segment_ids, L_q, L_k):
    """(..., L_q, L_k) bool: query i and key j belong to the same document."""
    q_seg = q_segment_ids if q_segment_ids is not None else kv_segment_ids
    kv_seg = kv_segment_ids if kv_segment_ids is not None else q_segment_ids
    q_seg, kv_seg = _segment_ids(q_seg, L_q, "q_segment_ids"), _segment_ids(kv_seg, L_k, "kv_segment_ids")
    return q_seg[..., :, None] == kv_seg[..., None, :]


def _visible_keys(mask, is_causal, shape, window_size=None, q_segment_ids=None, kv_segment_ids=None):
    """mask AND causal AND window AND same document, of `shape`."""
    L_q, L_k = shape[-2:]
    visible = _visible(mask, is_causal, shape)
    if window_size is not None:
        visible = visible & _window_visible(L_q, L_k, window_size)
    if q_segment_ids is not None or kv_segment_ids is not None:
        try:
            visible = visible & _document_visible(q_segment_ids, kv_segment_ids, L_q, L_k)
        except ValueError as exc:
            if "segment" in str(exc):
                raise
            raise ValueError(f"segment ids do not broadcast to the scores' shape {shape}") from None
    return visible


def _masked_softmax(scores, visible):
    """Softmax over the last axis using only visible entries; a row with none is all 0."""
    filled = np.where(visible, scores, -np.inf)
    row_max = filled.max(axis=-1, keepdims=True, initial=-np.inf)
    row_max = np.where(np.isfinite(row_max), row_max, 0)   # rows with no visible key
    e = np.where(visible, np.exp(filled - row_max), 0)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1)


def _check_softcap(cap):
    if isinstance(cap, bool) or not isinstance(cap, numbers.Real) or not np.isfinite(cap) or cap <= 0:
        raise ValueError(f"softcap must be a finite number > 0, got {cap!r}")
    return float(cap)


def _softcap(scores, cap):
    """cap * tanh(scores / cap): the scaled scores squashed into (-cap, cap), before the mask."""
    return cap * np.tanh(scores / cap)


def _sink_column(sinks, shape, dtype):
    """The per-head sink logits as (..., 1, 1), broadcastable to the scores' leading dims."""
    sinks = np.asarray(sinks)
    lead = tuple(shape[:-2])
    if not np.issubdtype(sinks.dtype, np.floating) or sinks.ndim > len(lead):
        raise ValueError(f"sinks must be float logits broadcastable to {lead}, got {sinks.dtype} of shape {sinks.shape}")
    try:
        broadcasts = np.broadcast_shapes(sinks.shape, lead) == lead
    except ValueError:
        broadcasts = False
    if not broadcasts:
        raise ValueError(f"sinks of shape {sinks.shape} do not broadcast to the scores' leading dims {lead}")
    return sinks.astype(dtype, copy=False)[..., None, None]


def _masked_softmax_with_sink(scores, visible, sink):
    """Softmax over the visible entries with exp(sink) in each row's denominator and no value of its own."""
    filled = np.where(visible, scores, -np.inf)
    row_max = np.maximum(filled.max(axis=-1, keepdims=True, initial=-np.inf), sink)
    row_max = np.where(np.isfinite(row_max), row_max, 0)
    e = np.where(visible, np.exp(filled - row_max), 0)
    total = e.sum(axis=-1, keepdims=True) + np.exp(sink - row_max)
    return e / np.where(total > 0, total, 1)


def _add_bias(scores, bias, shape):
    """scores + bias, the bias a float array broadcastable to the scores' shape."""
    if bias is None:
        return scores
    bias = np.asarray(bias)
    if bias.dtype == np.bool_:
        raise ValueError("bias must be a float array added to the scores; a boolean one belongs in mask=")
    try:
        return scores + np.broadcast_to(bias, shape).astype(scores.dtype, copy=False)
    except ValueError:
        raise ValueError(f"bias of shape {bias.shape} does not broadcast to the scores' shape {shape}") from None


def _attention_parts(q, k, mask, is_causal, scale, bias, window_size, q_segment_ids, kv_segment_ids, softcap,
                     sinks):
    """The scores the softmax sees (scaled, capped, biased), which keys are visible, and the sink column (or None)."""
    _check_qk(q, k)
    L_q, d_k = q.shape[-2:]
    L_k = k.shape[-2]
    shape = _batch_shape(q=q, k=k) + (L_q, L_k)
    visible = _visible_keys(mask, bool(is_causal), shape, window_size, q_segment_ids, kv_segment_ids)
    shape = np.broadcast_shapes(shape, visible.shape)
    scale = _default_scale(d_k) if scale is None else float(scale)
    scores = _scores(q, k, scale)
    if softcap is not None:
        scores = _softcap(scores, _check_softcap(softcap))   # the scaled scores, before mask and bias
    scores = _add_bias(np.broadcast_to(scores, shape), bias, shape)
    visible = visible & (scores > -np.inf)   # a -inf bias hides its key
    sink = None if sinks is None else _sink_column(sinks, shape, scores.dtype)
    return scores, visible, sink


def _check_dropout_p(dropout_p):
    if isinstance(dropout_p, bool) or not isinstance(dropout_p, numbers.Real) or not 0 <= dropout_p < 1:
        raise ValueError(f"dropout_p must be a number with 0 <= dropout_p < 1, got {dropout_p!r}")
    return float(dropout_p)


def _dropout(p, dropout_p, generator):
    """Each weight kept with probability 1 - p and scaled by 1 / (1 - p); one draw per weight, from `generator`."""
    dropout_p = _check_dropout_p(dropout_p)
    if dropout_p == 0:
        return p
    rng = np.random.default_rng() if generator is None else generator
    keep = rng.random(p.shape) >= dropout_p
    return np.where(keep, p / (1 - dropout_p), 0).astype(p.dtype, copy=False)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                      q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, dropout_p=0.0, generator=None):
    q, k = np.asarray(q), np.asarray(k)
    scores, visible, sink = _attention_parts(q, k, mask, is_causal, scale, bias, window_size, q_segment_ids,
                                             kv_segment_ids, softcap, sinks)
    if sink is not None:
        p = _masked_softmax_with_sink(scores, visible, sink)
    else:
        p = _masked_softmax(scores, visible)
    return _dropout(p, dropout_p, generator)


def _log_sum_exp(scores, visible, sink=None):
    """log of each row's softmax denominator, m + log sum exp(s - m); -inf for a row with nothing visible."""
    filled = np.where(visible, scores, -np.inf)
    row_max = filled.max(axis=-1, keepdims=True, initial=-np.inf)
    if sink is not None:
        row_max = np.maximum(row_max, sink)
    row_max = np.where(np.isfinite(row_max), row_max, 0)
    total = np.where(visible, np.exp(filled - row_max), 0).sum(axis=-1, keepdims=True)
    if sink is not None:
        total = total + np.exp(sink - row_max)
    with np.errstate(divide="ignore"):
        return (row_max + np.log(total))[..., 0]


def _weighted_values(p, v):
    """P V, with the values of keys that no query weighs set to 0 first (0 * NaN would be NaN)."""
    unseen = (p == 0).all(axis=-2)[..., None]   # (..., L_k, 1)
    return p @ np.where(unseen, v.dtype.type(0), v)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, return_lse=False,
                                 dropout_p=0.0, generator=None):
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    _check_qk(q, k)
    _check_lengths(k, v)
    _batch_shape(q=q, k=k, v=v)
    # The later keywords only when given: a known bug that rewrites attention_weights keeps its own signature.
    later = {name: value for name, value in (("window_size", window_size), ("q_segment_ids", q_segment_ids),
                                             ("kv_segment_ids", kv_segment_ids), ("softcap", softcap),
                                             ("sinks", sinks), ("generator", generator)) if value is not None}
    if dropout_p:
        later["dropout_p"] = dropout_p
    out = _weighted_values(attention_weights(q, k, mask, is_causal, scale, bias, **later), v)
    if not return_lse:
        return out
    scores, visible, sink = _attention_parts(q, k, mask, is_causal, scale, bias, window_size, q_segment_ids,
                                             kv_segment_ids, softcap, sinks)
    return out, _log_sum_exp(scores, visible, sink)


def merge_attention(out1, lse1, out2, lse2):
    """Attention over two disjoint key sets from each one's (out, lse): weights exp(lse_k - lse), lse = logaddexp."""
    out1, lse1, out2, lse2 = (np.asarray(x) for x in (out1, lse1, out2, lse2))
    if out1.shape != out2.shape or lse1.shape != lse2.shape or out1.shape[:-1] != lse1.shape:
        raise ValueError(f"partial results of mismatched shapes: out {out1.shape}, {out2.shape}; "
                         f"lse {lse1.shape}, {lse2.shape}")
    m = np.maximum(lse1, lse2)
    m = np.where(np.isfinite(m), m, 0)
    w1, w2 = np.exp(lse1 - m), np.exp(lse2 - m)
    total = w1 + w2
    with np.errstate(divide="ignore"):
        lse = m + np.log(total)
    total = np.where(total > 0, total, 1)
    return (w1 / total)[..., None] * out1 + (w2 / total)[..., None] * out2, lse


# ---------------------------------------------------------------------------
# Paged KV cache: token t of sequence b is k_cache[block_table[b, t // S], :, t % S]
# ---------------------------------------------------------------------------

def _check_paged(q, k_cache, v_cache, block_table, seq_lens):
    _require_ndim("q", q, 4)
    if k_cache.ndim != 4 or v_cache.shape[:3] != k_cache.shape[:3] or k_cache.shape[-1] != q.shape[-1]:
        raise ValueError(f"k_cache {k_cache.shape} and v_cache {v_cache.shape} must be (N, H_kv, S, d) "
                         f"with the d_k of q {q.shape}")
    if block_table.ndim != 2 or seq_lens.shape != (q.shape[0],) or block_table.shape[0] != q.shape[0]:
        raise ValueError(f"block_table {block_table.shape} and seq_lens {seq_lens.shape} need a row per sequence")
    if q.shape[1] % k_cache.shape[1]:
        raise ValueError(f"q's {q.shape[1]} heads are not a multiple of the cache's {k_cache.shape[1]}")
    capacity = block_table.shape[1] * k_cache.shape[2]
    if seq_lens.size and (seq_lens.min() < 0 or seq_lens.max() > capacity):
        raise ValueError(f"seq_lens {seq_lens.tolist()} must lie in 0 .. {capacity}")
    if block_table.size and (block_table.min() < 0 or block_table.max() >= k_cache.shape[0]):
        raise ValueError(f"block_table {block_table.tolist()} names blocks outside 0 .. {k_cache.shape[0] - 1}")


def _blocks_of(table_row, seq_len, block_size):
    """The pool blocks that hold tokens 0 .. seq_len - 1 of one sequence, in token order."""
    return [int(table_row[n]) for n in range(-(-seq_len // block_size))]


def _sequence_cache(cache, table_row, seq_len):
    """One sequence's keys or values, contiguous: (H_kv, seq_len, d)."""
    blocks = [cache[n] for n in _blocks_of(table_row, seq_len, cache.shape[2])]
    if not blocks:
        return np.zeros((cache.shape[1], 0, cache.shape[3]), dtype=cache.dtype)
    return np.concatenate(blocks, axis=1)[:, :seq_len]


def _cached_length(seq_len):
    """How many tokens of the sequence the cache holds."""
    return seq_len


def _paged_causal(L_q, seq_len):
    """(L_q, seq_len): query i, the last L_q positions of the sequence, sees token j <= i + seq_len - L_q."""
    return np.arange(seq_len)[None, :] <= np.arange(L_q)[:, None] + (seq_len - L_q)


def paged_attention(q, k_cache, v_cache, block_table, seq_lens, is_causal=False, scale=None):
    """Attention of q (B, H, L_q, d_k) over each sequence's tokens in a paged cache (N, H_kv, S, d)."""
    q, k_cache, v_cache = np.asarray(q), np.asarray(k_cache), np.asarray(v_cache)
    block_table, seq_lens = np.asarray(block_table), np.asarray(seq_lens)
    _check_paged(q, k_cache, v_cache, block_table, seq_lens)
    B, H, L_q = q.shape[:3]
    group = H // k_cache.shape[1]
    out = np.zeros((B, H, L_q, v_cache.shape[-1]), dtype=np.result_type(q, v_cache))
    for b in range(B):
        n = _cached_length(int(seq_lens[b]))
        k = np.repeat(_sequence_cache(k_cache, block_table[b], n), group, axis=0)  # (H, n, d_k)
        v = np.repeat(_sequence_cache(v_cache, block_table[b], n), group, axis=0)  # (H, n, d_v)
        if k.shape[1]:
            causal = _paged_causal(L_q, k.shape[1]) if is_causal else None
            out[b] = scaled_dot_product_attention(q[b], k, v, mask=causal, scale=scale)
    return out


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


def _check_mha(query, key, value, weights, num_heads, num_kv_heads=None):
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
    d_k = _head_dim(D, num_heads)
    G = num_heads if num_kv_heads is None else _require_int("num_kv_heads", num_kv_heads, 1)
    if num_heads % G != 0:
        raise ValueError(f"num_kv_heads={G} does not divide num_heads={num_heads}")
    width = {"q": D, "k": G * d_k, "v": G * d_k, "o": D}   # K and V: one d_k block per K/V head
    for which, n in width.items():
        name = "w_" + which
        if name not in weights:
            raise ValueError(f"weights has no {name!r}")
        if np.shape(weights[name]) != (D, n):
            raise ValueError(f"{name} has shape {np.shape(weights[name])}, expected ({D}, {n})")
        bias = weights.get("b_" + which)
        if bias is not None and np.shape(bias) != (n,):
            raise ValueError(f"b_{which} has shape {np.shape(bias)}, expected ({n},)")
    return G


def _project(x, weights, which):
    """y = x @ W + b in the math's orientation (W is (in, out))."""
    w = np.asarray(weights["w_" + which]).astype(x.dtype, copy=False)
    y = x @ w
    b = weights.get("b_" + which)
    if b is not None:
        y = y + np.asarray(b).astype(x.dtype, copy=False)
    return y


def _kv_head_of(num_heads, num_kv_heads):
    """For each query head, the K/V head it reads: consecutive query heads share one."""
    return np.arange(num_heads) // (num_heads // num_kv_heads)


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None,
                         window_size=None, q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None,
                         dropout_p=0.0, training=False, generator=None):
    query, key, value = np.asarray(query), np.asarray(key), np.asarray(value)
    G = _check_mha(query, key, value, weights, num_heads, num_kv_heads)
    q = split_heads(_project(query, weights, "q"), num_heads)
    share = _kv_head_of(num_heads, G)
    k = split_heads(_project(key, weights, "k"), G)[..., share, :, :]
    v = split_heads(_project(value, weights, "v"), G)[..., share, :, :]
    later = _head_keywords(window_size, q_segment_ids, kv_segment_ids, softcap, sinks)
    if _check_dropout_p(dropout_p) and training:   # no dropout in evaluation
        later.update(dropout_p=dropout_p, generator=generator)
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, **later)
    return _project(merge_heads(heads), weights, "o")


def _head_keywords(window_size, q_segment_ids, kv_segment_ids, softcap, sinks):
    """The later keywords given, as each head takes them: segment ids (B, L) gain a head axis, (B, 1, L)."""
    given = dict(window_size=window_size, softcap=softcap, sinks=sinks)
    for name, ids in (("q_segment_ids", q_segment_ids), ("kv_segment_ids", kv_segment_ids)):
        given[name] = None if ids is None else np.asarray(ids)[..., None, :]
    return {name: value for name, value in given.items() if value is not None}


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


def _layer_norm_inputs(x, gamma, beta):
    """x (..., D) as an array, gamma and beta checked as (D,) of x's dtype: LayerNorm's valid input."""
    x = np.asarray(x)
    _require_ndim("x", x, 1)
    return x, _check_affine("gamma", gamma, x.shape[-1], x.dtype), _check_affine("beta", beta, x.shape[-1], x.dtype)


def layer_norm(x, gamma, beta, eps=1e-5):
    x, gamma, beta = _layer_norm_inputs(x, gamma, beta)
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
# Rotary embedding and T5 buckets
# ---------------------------------------------------------------------------

def _rotary_angles(positions, d, base):
    """(..., L, d/2): angle of pair i at each position, positions * base^(-2i/d), in float64."""
    inv_freq = 1.0 / float(base) ** (np.arange(d // 2, dtype=np.float64) * 2.0 / d)
    return np.asarray(positions, dtype=np.float64)[..., None] * inv_freq


def _pairs(d):
    """Indices of the two features of each rotated pair: (2i, 2i+1), interleaved."""
    return np.arange(0, d, 2), np.arange(1, d, 2)


def rotary_embedding(x, positions, base=10000.0):
    x = np.asarray(x)
    _require_ndim("x", x, 2)
    d = x.shape[-1]
    if d % 2:
        raise ValueError(f"rotary embedding needs an even feature size, got {d}")
    positions = np.asarray(positions)
    try:
        np.broadcast_to(positions, x.shape[:-1])
    except ValueError:
        raise ValueError(f"positions of shape {positions.shape} do not give one position per row of x "
                         f"(shape {x.shape})") from None
    angle = _rotary_angles(positions, d, base)
    cos, sin = np.cos(angle).astype(x.dtype), np.sin(angle).astype(x.dtype)
    first, second = _pairs(d)
    out = np.empty(np.broadcast_shapes(x.shape, angle.shape[:-1] + (d,)), dtype=x.dtype)
    out[..., first] = x[..., first] * cos - x[..., second] * sin
    out[..., second] = x[..., first] * sin + x[..., second] * cos
    return out


def _log_bucket(r, exact, num_buckets, max_distance):
    """Bucket of a distance r >= exact: logarithmic between exact and max_distance, capped at the last."""
    scaled = np.log(np.maximum(r, exact) / exact) / np.log(max_distance / exact) * (num_buckets - exact)
    return np.minimum(exact + scaled.astype(np.int64), num_buckets - 1)


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = np.asarray(relative_position).astype(np.int64)
    if bidirectional:
        half = num_buckets // 2
        offset, r = np.where(n > 0, half, 0), np.abs(n)
    else:
        half = num_buckets
        offset, r = np.zeros_like(n), np.maximum(-n, 0)
    exact = half // 2
    return offset + np.where(r < exact, r, _log_bucket(r, exact, half, max_distance))


# ---------------------------------------------------------------------------
# Backward passes
# ---------------------------------------------------------------------------

def layer_norm_backward(dy, x, gamma, eps=1e-5):
    x, dy = np.asarray(x), np.asarray(dy)
    _require_ndim("x", x, 1)
    gamma = _check_affine("gamma", gamma, x.shape[-1], x.dtype)
    if dy.shape != x.shape:
        raise ValueError(f"dy has shape {dy.shape}, expected x's shape {x.shape}")
    mean, var = _moments(x)
    inv_std = 1.0 / np.sqrt(var + float(eps))
    x_hat = (x - mean) * inv_std
    rows = tuple(range(x.ndim - 1))
    return _layer_norm_dx(dy * gamma, x_hat, inv_std), (dy * x_hat).sum(axis=rows), dy.sum(axis=rows)


def _layer_norm_dx(g, x_hat, inv_std):
    """dx from g = dy * gamma: the mean's share (- mean g) and the variance's (- x_hat mean(g x_hat))."""
    return inv_std * (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))


def _softmax_backward(p, dp):
    """dS from dP through each row's softmax: P * (dP - sum_j P dP)."""
    return p * (dp - (p * dp).sum(axis=-1, keepdims=True))


def _unbroadcast(grad, shape):
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    return grad.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)


def scaled_dot_product_attention_backward(dout, q, k, v, mask=None, is_causal=False, scale=None):
    q, k, v, dout = np.asarray(q), np.asarray(k), np.asarray(v), np.asarray(dout)
    p = attention_weights(q, k, mask, is_causal, scale)
    if dout.shape != p.shape[:-1] + (v.shape[-1],):
        raise ValueError(f"dout has shape {dout.shape}, expected the output's shape {p.shape[:-1] + (v.shape[-1],)}")
    scale = _default_scale(q.shape[-1]) if scale is None else float(scale)
    ds = _softmax_backward(p, dout @ np.swapaxes(v, -1, -2)) * scale
    dq, dk, dv = ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ dout
    return _unbroadcast(dq, q.shape), _unbroadcast(dk, k.shape), _unbroadcast(dv, v.shape)


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
