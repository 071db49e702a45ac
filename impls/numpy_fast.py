"""Multi-head attention in NumPy, written for speed; follows the contract in CONTRACT.md.

Same math as the reference in `reference/`, arranged to make fewer passes over memory:

- no Python loop over heads or positions: all heads go through one batched matmul;
- self-attention projects Q, K and V with a single (D, 3D) matmul (K and V with (D, 2D)
  when key is value);
- temporaries this module allocated itself are updated in place (`out=`), never an argument;
- the user's mask and the causal mask are combined once, into one boolean array;
- a query with no visible key gets exact zeros, never NaN.

Outputs keep the input dtype. Scalars enter arithmetic as Python floats: under NumPy 2
a float32 array times an `np.float64` scalar is float64, times a Python float it stays float32.
"""

import math

import numpy as np

from impls._mask_keywords import and_masks, extra_mask
from impls._head_keywords import head_keywords
from impls._paged import as_contiguous
from reference.checks import check_attention, check_layer_norm, check_multi_head, check_num_heads, check_rotary
from reference.dropout import check_dropout_p
from reference.log_sum_exp import check_merge
from reference.sinks import sink_column
from reference.softcap import check_softcap

BACKEND = "numpy"
DTYPES = ("float64", "float32")


# --8<-- [start:visible]
def _visible(mask, is_causal, L_q, L_k):
    """mask AND (j <= i + L_k - L_q), broadcastable to (..., L_q, L_k); None when every key is visible."""
    if not is_causal:
        return mask
    causal = np.arange(L_k) <= np.arange(L_q)[:, None] + (L_k - L_q)  # (L_q, L_k), bottom-right aligned
    return causal if mask is None else np.logical_and(mask, causal)
# --8<-- [end:visible]


# --8<-- [start:softmax]
def _softmax_inplace(s, allowed):
    """P = softmax(S) over visible keys, written into the fresh scores `s`; a row with no visible key is 0."""
    if allowed is not None:
        np.copyto(s, -np.inf, where=~allowed)  # exp(-inf) is an exact 0 weight
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)  # (..., L_q, 1), each row stabilised by its own maximum
    m[np.isneginf(m)] = 0.0  # no visible key (masked, or a bias of -inf): -inf - -inf would be NaN
    np.subtract(s, m, out=s)
    np.exp(s, out=s)
    z = s.sum(axis=-1, keepdims=True)  # (..., L_q, 1); 0 only where no key is visible
    z[z == 0] = 1.0  # such a row is all 0 and stays all 0
    np.divide(s, z, out=s)
    return s
# --8<-- [end:softmax]


def _softmax_with_sink_inplace(s, allowed, sink):
    """As _softmax_inplace, with exp(sink) in each row's denominator (sink (..., 1, 1)): rows sum to < 1."""
    if allowed is not None:
        np.copyto(s, -np.inf, where=~allowed)
    m = np.maximum(s.max(axis=-1, keepdims=True, initial=-np.inf), sink)  # (..., L_q, 1): the sink joins the row maximum
    m[np.isneginf(m)] = 0.0
    s = s - m  # (..., L_q, L_k); a new array: the sink may carry more leading dims than the scores
    np.exp(s, out=s)
    z = s.sum(axis=-1, keepdims=True) + np.exp(sink - m)  # keys plus the sink, which carries no value
    z[z == 0] = 1.0
    np.divide(s, z, out=s)
    return s


def _weights(q, k, allowed, scale, bias=None, softcap=None, sinks=None):
    """softmax(Q K^T * scale + bias) restricted to `allowed`; (..., L_q, L_k), no input checks."""
    s = q @ np.swapaxes(k, -1, -2)  # (..., L_q, L_k), a fresh array we may overwrite
    if scale != 1.0:
        s *= scale
    if softcap is not None:  # cap * tanh(S / cap), on the scaled scores, before the mask and the bias
        cap = check_softcap(softcap)
        s /= cap
        np.tanh(s, out=s)
        s *= cap
    if sinks is not None:
        sink = sink_column(sinks, s.shape).astype(s.dtype, copy=False)  # (..., 1, 1)
        if bias is not None:
            s = s + bias
        return _softmax_with_sink_inplace(s, allowed, sink)
    if bias is not None:
        if np.broadcast_shapes(s.shape, bias.shape) == s.shape:
            s += bias  # in place on our own scores
        else:
            s = s + bias  # the bias has more leading dims than q and k: a new, larger array
    return _softmax_inplace(s, allowed)


def _default_scale(d_k, scale):
    return 1.0 / math.sqrt(d_k) if scale is None else float(scale)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                      q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, dropout_p=0.0, generator=None):
    """P = softmax(Q K^T * scale + bias) over visible keys, scale = 1/sqrt(d_k) by default; (..., L_q, L_k)."""
    *_, L_q, L_k = check_attention(q, k, mask=mask, bias=bias)
    scale = _default_scale(q.shape[-1], scale)
    extra = extra_mask(q, L_q, L_k, window_size, q_segment_ids, kv_segment_ids)  # window AND documents
    p = _weights(q, k, and_masks(_visible(mask, is_causal, L_q, L_k), extra), scale, bias, softcap, sinks)
    return _dropout(p, dropout_p, generator)


# --8<-- [start:dropout]
def _dropout(p, dropout_p, generator):
    """P' = P * M / (1 - p), M_ij ~ Bernoulli(1 - p) from `generator` (np.random.Generator); P when p = 0."""
    dropout_p = check_dropout_p(dropout_p)
    if dropout_p == 0:
        return p
    rng = np.random.default_rng() if generator is None else generator
    keep = rng.random(p.shape, dtype=np.float64) >= dropout_p  # (..., L_q, L_k), one draw per weight and head
    return np.where(keep, p * p.dtype.type(1 / (1 - dropout_p)), p.dtype.type(0))
# --8<-- [end:dropout]


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, return_lse=False,
                                 dropout_p=0.0, generator=None):
    """softmax(Q K^T * scale + bias) V; q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v) -> (..., L_q, d_v).

    return_lse=True: (out, lse), lse (..., L_q) the log of each row's softmax denominator, -inf for a dead row."""
    *_, L_q, L_k = check_attention(q, k, v, mask=mask, bias=bias)
    scale = _default_scale(q.shape[-1], scale)
    allowed = and_masks(_visible(mask, is_causal, L_q, L_k),
                        extra_mask(q, L_q, L_k, window_size, q_segment_ids, kv_segment_ids))  # AND window, documents
    p = _dropout(_weights(q, k, allowed, scale, bias, softcap, sinks), dropout_p, generator)  # (..., L_q, L_k)
    unseen = (p == 0).all(axis=-2)[..., None]  # (..., L_k, 1): keys no query weighs (0 · NaN would be NaN)
    out = p @ np.where(unseen, v.dtype.type(0), v)  # (..., L_q, d_v); a zero row of P gives a zero row
    if not return_lse:
        return out
    return out, _log_sum_exp(q, k, allowed, scale, bias, softcap, sinks)


def _log_sum_exp(q, k, allowed, scale, bias, softcap, sinks):
    """lse_i = m_i + log sum_j exp(S_ij - m_i) over visible keys (and the sink); -inf for a dead row; (..., L_q)."""
    s = q @ np.swapaxes(k, -1, -2) * scale  # (..., L_q, L_k): the scores again, a second pass
    if softcap is not None:
        s = softcap * np.tanh(s / softcap)
    if bias is not None:
        s = s + bias
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)  # (..., L_q, 1)
    sink = None if sinks is None else sink_column(sinks, s.shape).astype(s.dtype, copy=False)
    if sink is not None:
        m = np.maximum(m, sink)
    m = np.where(np.isneginf(m), 0.0, m).astype(s.dtype, copy=False)
    z = np.exp(s - m).sum(axis=-1, keepdims=True)
    if sink is not None:
        z = z + np.exp(sink - m)
    with np.errstate(divide="ignore"):
        return (m + np.log(z))[..., 0]


def merge_attention(out1, lse1, out2, lse2):
    """Attention over two disjoint key sets from each one's (out, lse): out = sum_k exp(lse_k - lse) out_k."""
    check_merge(out1, lse1, out2, lse2)
    lse = np.logaddexp(lse1, lse2)  # (..., L_q); -inf when both halves saw nothing
    finite = np.isfinite(lse)
    safe = np.where(finite, lse, 0.0)
    w1 = np.where(finite, np.exp(lse1 - safe), 0.0)[..., None]  # (..., L_q, 1): each half's share
    w2 = np.where(finite, np.exp(lse2 - safe), 0.0)[..., None]
    return w1 * out1 + w2 * out2, lse


def split_heads(x, num_heads):
    """(..., L, D) -> (..., H, L, D/H): head h gets features h*d_k:(h+1)*d_k."""
    *lead, L, D = x.shape
    d_k = check_num_heads(D, num_heads)
    return np.swapaxes(x.reshape(*lead, L, num_heads, d_k), -3, -2)  # (..., H, L, d_k), a view when possible


def merge_heads(heads):
    """(..., H, L, d) -> (..., L, H*d): out[..., l, h*d:(h+1)*d] = heads[..., h, l, :]."""
    *lead, H, L, d = heads.shape
    return np.swapaxes(heads, -3, -2).reshape(*lead, L, H * d)  # (..., L, H*d)


def _linear(x, w, b):
    """y = x W + b as one 2-D GEMM over all rows, the bias added in place on the fresh product."""
    *lead, D = x.shape
    y = x.reshape(-1, D) @ w  # (B*L, D'): one BLAS call instead of one per batch element
    if b is not None:
        y += b
    return y.reshape(*lead, w.shape[1])  # (B, L, D')


def _fused(ws, bs):
    """Column-concatenate projections (and their biases; a missing bias is zeros) into one."""
    w = np.concatenate(ws, axis=1)  # (D, n*D)
    if all(b is None for b in bs):
        return w, None
    return w, np.concatenate([np.zeros(w_.shape[1], w_.dtype) if b is None else b for w_, b in zip(ws, bs)])


def _to_heads(y, n, H, d_k):
    """n projections side by side (B, L, n*D) -> n head stacks (n, B, H, L, d_k), contiguous.

    One copy, paid once: BLAS runs the per-head matmuls much faster on contiguous
    (L, d_k) blocks than on strided views into the projection.
    """
    B, L, _ = y.shape
    y = y.reshape(B, L, n, H, d_k).transpose(2, 0, 3, 1, 4)  # (n, B, H, L, d_k), a strided view
    return np.ascontiguousarray(y)  # (n, B, H, L, d_k)


# --8<-- [start:multi_head_attention]
def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None,
                         window_size=None, q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None,
                         dropout_p=0.0, training=False, generator=None):
    """Concat(head_1..head_H) W^O + b_O; query (B, L_q, D), key/value (B, L_k, D) -> (B, L_q, D).

    num_kv_heads = G < H (grouped-query attention): W^K, W^V are (D, G*d_k) and query head h
    reads K/V head h // (H/G). The K/V heads are never repeated: the H/G query heads of a
    group are stacked into one taller query matrix against their shared K/V head.
    """
    d_k, G = check_multi_head(query, key, value, weights, num_heads, mask, num_kv_heads)
    B, L_q, D = query.shape
    L_k = key.shape[1]
    H = num_heads
    r = H // G  # query heads per K/V head
    w_q, w_k, w_v, w_o = (weights[n] for n in ("w_q", "w_k", "w_v", "w_o"))
    b_q, b_k, b_v, b_o = (weights.get(n) for n in ("b_q", "b_k", "b_v", "b_o"))

    # 1) project: one GEMM per distinct input array, each with all its heads' columns
    if query is key and key is value and G == H:
        q, k, v = _to_heads(_linear(query, *_fused((w_q, w_k, w_v), (b_q, b_k, b_v))), 3, H, d_k)  # 3 x (B, H, L, d_k)
    else:
        (q,) = _to_heads(_linear(query, w_q, b_q), 1, H, d_k)  # (B, H, L_q, d_k)
        if key is value:
            k, v = _to_heads(_linear(key, *_fused((w_k, w_v), (b_k, b_v))), 2, G, d_k)  # 2 x (B, G, L_k, d_k)
        else:
            (k,) = _to_heads(_linear(key, w_k, b_k), 1, G, d_k)  # (B, G, L_k, d_k)
            (v,) = _to_heads(_linear(value, w_v, b_v), 1, G, d_k)  # (B, G, L_k, d_k)

    later = head_keywords(window_size, q_segment_ids, kv_segment_ids, softcap, sinks)
    if check_dropout_p(dropout_p) and training:  # dropout only while training, never in evaluation
        later.update(dropout_p=dropout_p, generator=generator)
    if later:  # a later chapter's keyword: every head through this module's attention, K/V heads repeated
        k, v = (np.repeat(t, r, axis=1) if r > 1 else t for t in (k, v))  # (B, H, L_k, d_k)
        heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, **later)  # (B, H, L_q, d_k)
        return _linear(heads.transpose(0, 2, 1, 3).reshape(B, L_q, D), w_o, b_o)  # (B, L_q, D)
    # 2) attend, all heads in one batched matmul; the scale goes into q (L_q x d_k numbers,
    # our own copy) rather than into the L_q x L_k scores
    q *= 1.0 / math.sqrt(d_k)
    allowed = _visible(mask, is_causal, L_q, L_k)  # broadcastable to (B, H, L_q, L_k)
    if r > 1:  # heads g*r .. g*r + r-1 share K/V head g: stack their queries (and mask rows)
        q = q.reshape(B, G, r * L_q, d_k)  # a view: q is contiguous (B, H, L_q, d_k)
        if allowed is not None:
            allowed = np.broadcast_to(allowed, (B, H, L_q, L_k)).reshape(B, G, r * L_q, L_k)
    p = _weights(q, k, allowed, 1.0)  # (B, G, r*L_q, L_k)
    heads = (p @ v).reshape(B, H, L_q, d_k)  # (B, H, L_q, d_k)

    # 3) concat along features, then W^O maps H*d_k back to D
    concat = heads.transpose(0, 2, 1, 3).reshape(B, L_q, D)  # (B, L_q, H*d_k)
    return _linear(concat, w_o, b_o)  # (B, L_q, D)
# --8<-- [end:multi_head_attention]


# --8<-- [start:layer_norm]
def layer_norm(x, gamma, beta, eps=1e-5):
    """gamma * (x - mean) / sqrt(var + eps) + beta over the last axis, biased variance; (..., D) -> (..., D)."""
    check_layer_norm(x, gamma, beta)
    c = x - x.mean(axis=-1, keepdims=True)  # (..., D), fresh: two passes, no E[x²] - E[x]² cancellation
    # The centred row's own mean is the rounding error of the first mean; removing it
    # (the corrected two-pass algorithm) keeps float32 rows with a large mean accurate.
    c -= c.mean(axis=-1, keepdims=True)
    var = np.square(c).mean(axis=-1, keepdims=True)  # (..., 1), divides by D, not D - 1
    var += float(eps)
    np.sqrt(var, out=var)
    c /= var
    c *= gamma
    c += beta
    return c
# --8<-- [end:layer_norm]


def sinusoidal_positional_encoding(length, d_model):
    """PE[p, 2i] = sin(p ω_i), PE[p, 2i+1] = cos(p ω_i), ω_i = 10000^(-2i/D); (length, D) float64."""
    p = np.arange(length, dtype=np.float64)[:, None]  # (length, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)  # (ceil(D/2),): the exponent's 2i
    angle = p / 10000.0 ** (two_i / d_model)  # (length, ceil(D/2)), the reference's exact expression
    pe = np.empty((length, d_model))
    np.sin(angle, out=pe[:, 0::2])
    np.cos(angle[:, : d_model // 2], out=pe[:, 1::2])  # odd D: the last column is a sin
    return pe


def rotary_embedding(x, positions, base=10000.0):
    """RoPE on interleaved pairs, as complex numbers: (x[2i] + i x[2i+1]) · e^{i m θ_i}; (..., L, d) -> (..., L, d)."""
    check_rotary(x, positions)
    d = x.shape[-1]
    theta = float(base) ** (-np.arange(0, d, 2) / d)  # (d/2,), float64
    angle = np.asarray(positions, dtype=np.float64)[..., None] * theta  # (..., L, d/2): angles in float64
    pairs = x.reshape(*x.shape[:-1], d // 2, 2)  # (..., L, d/2, 2)
    z = pairs[..., 0] + 1j * pairs[..., 1]  # complex64 for float32 x, complex128 for float64
    z = z * np.exp(1j * angle).astype(z.dtype)  # one complex multiply rotates each pair
    out = np.stack([z.real, z.imag], axis=-1)  # (..., L, d/2, 2)
    return out.reshape(*out.shape[:-2], d).astype(x.dtype, copy=False)


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's bucket of n = j - i, by lookup: the bucket of every distance 0..max_distance is tabulated once."""
    n = np.asarray(relative_position, dtype=np.int64)
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    exact = per_direction // 2
    table = np.arange(max_distance + 1)  # (M + 1,): distances below E are their own bucket
    far = table[exact:]  # a view: the logarithmic range E..M, rewritten in place
    far[:] = np.minimum(exact + np.floor(np.log(far / exact) / np.log(max_distance / exact) * (per_direction - exact)),
                        per_direction - 1)
    if bidirectional:
        return np.where(n > 0, per_direction, 0) + table[np.minimum(np.abs(n), max_distance)]
    return table[np.minimum(np.maximum(-n, 0), max_distance)]


def layer_norm_backward(dy, x, gamma, eps=1e-5):
    """(dx, dgamma, dbeta) of LayerNorm given dy: dx = (D g - Σg - x̂ Σ(g x̂)) / (D σ), g = dy · gamma."""
    check_layer_norm(x, gamma, gamma)  # beta does not enter the gradient
    if dy.shape != x.shape:
        raise ValueError(f"dy must have x's shape {tuple(x.shape)}, got {tuple(dy.shape)}")
    D = x.shape[-1]
    c = x - x.mean(axis=-1, keepdims=True)  # (..., D)
    c -= c.mean(axis=-1, keepdims=True)  # corrected two-pass, as in layer_norm
    inv_sigma = 1.0 / np.sqrt(np.square(c).mean(axis=-1, keepdims=True) + float(eps))  # (..., 1)
    x_hat = c * inv_sigma  # (..., D), our own array
    rows = dy.reshape(-1, D)
    dbeta = rows.sum(axis=0)  # (D,)
    dgamma = np.einsum("nd,nd->d", rows, x_hat.reshape(-1, D))  # (D,)
    g = dy * gamma  # (..., D)
    dx = D * g
    dx -= g.sum(axis=-1, keepdims=True)
    dx -= x_hat * np.einsum("...d,...d->...", g, x_hat)[..., None]
    dx *= inv_sigma / D
    return dx, dgamma, dbeta


def _reduce_to(grad, shape):
    """Sum a gradient over the axes its input was broadcast along, back to the input's shape."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


def scaled_dot_product_attention_backward(dout, q, k, v, mask=None, is_causal=False, scale=None):
    """(dq, dk, dv) of out = softmax(Q K^T * scale) V given dout.

    Uses FlashAttention's identity rowsum(dP ⊙ P) = rowsum(dO ⊙ O): the softmax's correction
    term is one dot product per query row, computed from the output instead of from P.
    """
    scores_shape = check_attention(q, k, v, mask=mask)
    out_shape = tuple(scores_shape[:-1]) + (v.shape[-1],)
    if tuple(dout.shape) != out_shape:
        raise ValueError(f"dout must have the output's shape {out_shape} (..., L_q, d_v), got {tuple(dout.shape)}")
    L_q, L_k = scores_shape[-2:]
    scale = _default_scale(q.shape[-1], scale)
    p = _weights(q, k, _visible(mask, is_causal, L_q, L_k), scale)  # (..., L_q, L_k)
    out = p @ v  # (..., L_q, d_v)
    delta = np.einsum("...qd,...qd->...q", dout, out)[..., None]  # (..., L_q, 1) = rowsum(dP ⊙ P)
    dv = np.swapaxes(p, -1, -2) @ dout  # (..., L_k, d_v)
    ds = dout @ np.swapaxes(v, -1, -2)  # dP, (..., L_q, L_k)
    ds -= delta
    ds *= p  # dS = P ⊙ (dP - delta): 0 wherever a key is hidden
    ds *= scale
    dq = ds @ k  # (..., L_q, d_k)
    dk = np.swapaxes(ds, -1, -2) @ q  # (..., L_k, d_k)
    return _reduce_to(dq, q.shape), _reduce_to(dk, k.shape), _reduce_to(dv, v.shape)


# --8<-- [start:paged_attention]
def paged_attention(q, k_cache, v_cache, block_table, seq_lens, is_causal=False, scale=None):
    """Attention of q (B, H, L_q, d_k) over each sequence's tokens in a paged cache (N, H_kv, S, d); (B, H, L_q, d_v).

    The whole table is gathered at once into a padded (B, H, M·S, d) cache; a mask hides the slots past seq_lens."""
    k, v, mask = as_contiguous(q, k_cache, v_cache, block_table, seq_lens, is_causal)
    return scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)
# --8<-- [end:paged_attention]
