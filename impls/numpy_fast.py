"""Multi-head attention in NumPy, written for speed; follows the contract of DESIGN.md.

Same math as the oracle in `reference/`, arranged to make fewer passes over memory:

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

from reference.checks import check_attention, check_layer_norm, check_multi_head, check_num_heads

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
    m = s.max(axis=-1, keepdims=True)  # (..., L_q, 1), each row stabilised by its own maximum
    if allowed is not None:
        m[np.isneginf(m)] = 0.0  # no visible key: -inf - -inf would be NaN
    np.subtract(s, m, out=s)
    np.exp(s, out=s)
    z = s.sum(axis=-1, keepdims=True)  # (..., L_q, 1); 0 only where no key is visible
    z[z == 0] = 1.0  # such a row is all 0 and stays all 0
    np.divide(s, z, out=s)
    return s
# --8<-- [end:softmax]


def _weights(q, k, allowed, scale):
    """softmax(Q K^T * scale) restricted to `allowed`; (..., L_q, L_k), no input checks."""
    s = q @ np.swapaxes(k, -1, -2)  # (..., L_q, L_k), a fresh array we may overwrite
    if scale != 1.0:
        s *= scale
    return _softmax_inplace(s, allowed)


def _default_scale(d_k, scale):
    return 1.0 / math.sqrt(d_k) if scale is None else float(scale)


def attention_weights(q, k, mask=None, is_causal=False, scale=None):
    """P = softmax(Q K^T * scale) over visible keys, scale = 1/sqrt(d_k) by default; (..., L_q, L_k)."""
    *_, L_q, L_k = check_attention(q, k, mask=mask)
    scale = _default_scale(q.shape[-1], scale)
    return _weights(q, k, _visible(mask, is_causal, L_q, L_k), scale)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    """softmax(Q K^T * scale) V; q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v) -> (..., L_q, d_v)."""
    *_, L_q, L_k = check_attention(q, k, v, mask=mask)
    scale = _default_scale(q.shape[-1], scale)
    p = _weights(q, k, _visible(mask, is_causal, L_q, L_k), scale)  # (..., L_q, L_k)
    return p @ v  # (..., L_q, d_v); a zero row of P gives a zero row


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
def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
    """Concat(head_1..head_H) W^O + b_O; query (B, L_q, D), key/value (B, L_k, D) -> (B, L_q, D)."""
    d_k, _ = check_multi_head(query, key, value, weights, num_heads, mask)
    B, L_q, D = query.shape
    L_k = key.shape[1]
    H = num_heads
    w_q, w_k, w_v, w_o = (weights[n] for n in ("w_q", "w_k", "w_v", "w_o"))
    b_q, b_k, b_v, b_o = (weights.get(n) for n in ("b_q", "b_k", "b_v", "b_o"))

    # 1) project: one GEMM per distinct input array, each with all its heads' columns
    if query is key and key is value:
        q, k, v = _to_heads(_linear(query, *_fused((w_q, w_k, w_v), (b_q, b_k, b_v))), 3, H, d_k)  # 3 x (B, H, L, d_k)
    else:
        (q,) = _to_heads(_linear(query, w_q, b_q), 1, H, d_k)  # (B, H, L_q, d_k)
        if key is value:
            k, v = _to_heads(_linear(key, *_fused((w_k, w_v), (b_k, b_v))), 2, H, d_k)  # 2 x (B, H, L_k, d_k)
        else:
            (k,) = _to_heads(_linear(key, w_k, b_k), 1, H, d_k)  # (B, H, L_k, d_k)
            (v,) = _to_heads(_linear(value, w_v, b_v), 1, H, d_k)  # (B, H, L_k, d_k)

    # 2) attend, all heads in one batched matmul; the scale goes into q (L_q x d_k numbers,
    # our own copy) rather than into the L_q x L_k scores
    q *= 1.0 / math.sqrt(d_k)
    p = _weights(q, k, _visible(mask, is_causal, L_q, L_k), 1.0)  # (B, H, L_q, L_k)
    heads = p @ v  # (B, H, L_q, d_k)

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
    angle = p / 10000.0 ** (two_i / d_model)  # (length, ceil(D/2)), the oracle's exact expression
    pe = np.empty((length, d_model))
    np.sin(angle, out=pe[:, 0::2])
    np.cos(angle[:, : d_model // 2], out=pe[:, 1::2])  # odd D: the last column is a sin
    return pe
