"""Multi-head attention read literally from lecture note 1 §1: H separate heads, one at a time.

"Do H separate attention computations, each head with its own W_Q, W_K, W_V, then
concatenate and fuse" (lecture note 1 §1, §3). Head h's own D x d_k matrices are the column
blocks h*d_k:(h+1)*d_k of the (D, D) `w_q`, `w_k`, `w_v` of the contract (CONTRACT.md),
so this file and the fused implementations must agree (claim MHA-4).

Plain NumPy with plain loops, written to be read, not to be fast: each attention matrix
is computed one (L_q, L_k) slice at a time and each softmax one query row at a time.
"""

import math

import numpy as np

from reference.checks import check_attention, check_layer_norm, check_multi_head, check_num_heads, check_rotary
from reference.dropout import check_dropout_p

BACKEND = "numpy"
DTYPES = ("float64", "float32")


# --8<-- [start:visible]
def _visible(mask, is_causal, L_q, L_k):
    """Which keys each query may see: mask AND (j <= i + L_k - L_q); (..., L_q, L_k) bool."""
    allowed = np.ones((L_q, L_k), dtype=bool)
    if mask is not None:
        allowed = allowed & mask
    if is_causal:
        for i in range(L_q):
            last = i + (L_k - L_q)  # the last key query i may see: the queries are the last L_q positions
            allowed[..., i, max(last + 1, 0) :] = False  # last < 0: it sees none
    return allowed
# --8<-- [end:visible]


# --8<-- [start:softmax]
def _softmax_row(scores, allowed):
    """softmax of one row over its allowed keys; no allowed key -> all 0."""
    p = np.zeros_like(scores)
    if not allowed.any():
        return p  # nothing to attend to: output 0, not NaN, not the mean of v
    s = scores[allowed]
    e = np.exp(s - s.max())  # stabilised by the row's own maximum
    p[allowed] = e / e.sum()
    return p
# --8<-- [end:softmax]


def _attention_matrix(q, k, allowed, scale, bias=None):
    """One head, one batch element: P = softmax(Q K^T * scale + bias); q (L_q, d_k), k (L_k, d_k) -> (L_q, L_k)."""
    scores = (q @ k.T) * scale  # (L_q, L_k)
    if bias is not None:
        scores = scores + bias  # (L_q, L_k)
    p = np.zeros_like(scores)
    for i in range(q.shape[0]):
        p[i] = _softmax_row(scores[i], allowed[i] & (scores[i] != -np.inf))  # a -inf bias hides its key
    return p


# --8<-- [start:dropout]
def _dropout_one(p, dropout_p, rng):
    """One head's P' = P * M / (1 - p): each weight, one at a time, kept when its draw u_ij >= p."""
    out = np.zeros_like(p)
    for i in range(p.shape[0]):
        for j in range(p.shape[1]):
            if rng.random() >= dropout_p:  # kept, with probability 1 - p
                out[i, j] = p[i, j] / (1 - dropout_p)
    return out  # (L_q, L_k); a dropped weight is exactly 0
# --8<-- [end:dropout]


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, dropout_p=0.0, generator=None):
    """P = softmax(Q K^T * scale + bias) over visible keys, scale = 1/sqrt(d_k) by default; (..., L_q, L_k).

    dropout_p > 0: each head's weights dropped in turn, their draws taken from `generator` (np.random.Generator)."""
    scores_shape = check_attention(q, k, mask=mask, bias=bias)
    dropout_p = check_dropout_p(dropout_p)
    rng = np.random.default_rng() if generator is None else generator
    *batch, L_q, L_k = scores_shape
    d_k = q.shape[-1]
    scale = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
    q = np.broadcast_to(q, (*batch, L_q, d_k))  # (..., L_q, d_k)
    k = np.broadcast_to(k, (*batch, L_k, d_k))  # (..., L_k, d_k)
    allowed = np.broadcast_to(_visible(mask, is_causal, L_q, L_k), scores_shape)  # (..., L_q, L_k)
    bias = None if bias is None else np.broadcast_to(bias, scores_shape)  # (..., L_q, L_k)
    p = np.zeros(scores_shape, dtype=np.result_type(q, k))
    for idx in np.ndindex(*batch):  # every batch element and head on its own
        p[idx] = _attention_matrix(q[idx], k[idx], allowed[idx], scale, None if bias is None else bias[idx])
        if dropout_p > 0:  # its own draws: the heads' patterns are independent
            p[idx] = _dropout_one(p[idx], dropout_p, rng)
    return p


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, dropout_p=0.0,
                                 generator=None):
    """softmax(Q K^T * scale + bias) V; q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v) -> (..., L_q, d_v).

    dropout_p > 0: P' V with the weights of attention_weights(..., dropout_p, generator)."""
    check_attention(q, k, v, mask=mask, bias=bias)
    p = attention_weights(q, k, mask=mask, is_causal=is_causal, scale=scale, bias=bias, dropout_p=dropout_p,
                          generator=generator)  # (..., L_q, L_k)
    unseen = (p == 0).all(axis=-2)[..., None]  # (..., L_k, 1): keys no query weighs (0 · NaN would be NaN)
    return p @ np.where(unseen, v.dtype.type(0), v)  # (..., L_q, L_k) @ (..., L_k, d_v) -> (..., L_q, d_v)


def split_heads(x, num_heads):
    """(..., L, D) -> (..., H, L, D/H): head h gets features h*d_k:(h+1)*d_k."""
    D = x.shape[-1]
    d_k = check_num_heads(D, num_heads)
    heads = [x[..., h * d_k : (h + 1) * d_k] for h in range(num_heads)]  # H x (..., L, d_k)
    return np.stack(heads, axis=-3)  # (..., H, L, d_k)


def merge_heads(heads):
    """(..., H, L, d) -> (..., L, H*d): out[..., l, h*d:(h+1)*d] = heads[..., h, l, :]."""
    H = heads.shape[-3]
    return np.concatenate([heads[..., h, :, :] for h in range(H)], axis=-1)  # (..., L, H*d), along features


def _block(w, b, h, d_k):
    """Head h's own projection: columns h*d_k:(h+1)*d_k of W (D, D) and of b (D,)."""
    cols = slice(h * d_k, (h + 1) * d_k)
    return w[:, cols], (None if b is None else b[cols])  # (D, d_k), (d_k,)


def _project(x, w, b):
    """y = x W + b."""
    y = x @ w
    return y if b is None else y + b


# --8<-- [start:multi_head_attention]
def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None,
                         dropout_p=0.0, training=False, generator=None):
    """Concat(head_1..head_H) W^O + b_O, head_h = Attention(Q W_h^Q, K W_g^K, V W_g^V); -> (B, L_q, D).

    g = h for multi-head attention; with num_kv_heads = G, g = h // (H/G): W^K and W^V hold
    G column blocks, and H/G consecutive query heads read the same one. training=True: each head
    drops its weights, drawing in turn from the one `generator`; training=False: no dropout.
    """
    d_k, G = check_multi_head(query, key, value, weights, num_heads, mask, num_kv_heads)
    dropout_p = check_dropout_p(dropout_p)  # checked in evaluation too
    if not training:
        dropout_p = 0.0  # evaluation: no dropout, whatever dropout_p
    rng = np.random.default_rng() if generator is None else generator  # one generator for every head
    B, L_q, D = query.shape
    L_k = key.shape[1]
    # the mask as seen by head h: (B, H, L_q, L_k) -> (B, L_q, L_k)
    head_mask = None if mask is None else np.broadcast_to(mask, (B, num_heads, L_q, L_k))
    outputs = []
    for h in range(num_heads):
        # 1) this head's own projections, D -> d_k
        g = h // (num_heads // G)  # this head's K/V head
        q = _project(query, *_block(weights["w_q"], weights.get("b_q"), h, d_k))  # (B, L_q, d_k)
        k = _project(key, *_block(weights["w_k"], weights.get("b_k"), g, d_k))  # (B, L_k, d_k)
        v = _project(value, *_block(weights["w_v"], weights.get("b_v"), g, d_k))  # (B, L_k, d_k)
        # 2) this head's attention
        m = None if head_mask is None else head_mask[:, h]  # (B, L_q, L_k)
        outputs.append(scaled_dot_product_attention(q, k, v, mask=m, is_causal=is_causal, dropout_p=dropout_p,
                                                    generator=rng))  # (B, L_q, d_k)
    # 3) concat along the features (not along L), then W^O fuses the heads back to D
    concat = np.concatenate(outputs, axis=-1)  # (B, L_q, H*d_k)
    return _project(concat, weights["w_o"], weights.get("b_o"))  # (B, L_q, D)
# --8<-- [end:multi_head_attention]


def layer_norm(x, gamma, beta, eps=1e-5):
    """gamma * (x - mean) / sqrt(var + eps) + beta over the last axis, biased variance; (..., D) -> (..., D)."""
    check_layer_norm(x, gamma, beta)
    D = x.shape[-1]
    mean = x.sum(axis=-1, keepdims=True) / D  # (..., 1)
    centred = x - mean  # (..., D)
    # In float32 the mean itself is rounded; the centred row's own mean is that rounding
    # error, and removing it (the corrected two-pass algorithm) gives rows of mean 0.
    centred = centred - centred.sum(axis=-1, keepdims=True) / D
    var = (centred**2).sum(axis=-1, keepdims=True) / D  # (..., 1), biased: divides by D, not D - 1
    return gamma * centred / np.sqrt(var + float(eps)) + beta


def sinusoidal_positional_encoding(length, d_model):
    """PE[p, 2i] = sin(p / 10000^(2i/D)), PE[p, 2i+1] = cos(p / 10000^(2i/D)); (length, D) float64."""
    p = np.arange(length, dtype=np.float64)  # (length,) positions
    pe = np.zeros((length, d_model))
    for two_i in range(0, d_model, 2):  # one frequency per pair of columns (2i, 2i+1)
        angle = p / 10000.0 ** (two_i / d_model)  # (length,)
        pe[:, two_i] = np.sin(angle)
        if two_i + 1 < d_model:  # odd D: the last column is a sin without its cos
            pe[:, two_i + 1] = np.cos(angle)
    return pe


def rotary_embedding(x, positions, base=10000.0):
    """RoPE read literally: each row's pair (x[2i], x[2i+1]) times the 2 x 2 rotation by positions[l] θ_i."""
    check_rotary(x, positions)
    d = x.shape[-1]
    m = np.broadcast_to(np.asarray(positions, dtype=np.float64), x.shape[:-1])  # one position per row
    out = np.empty_like(x)
    for idx in np.ndindex(*x.shape[:-1]):  # every row on its own
        for i in range(d // 2):  # every pair on its own
            angle = m[idx] * float(base) ** (-2.0 * i / d)
            rotation = np.array([[math.cos(angle), -math.sin(angle)],
                                 [math.sin(angle), math.cos(angle)]], dtype=x.dtype)
            out[idx][2 * i:2 * i + 2] = rotation @ x[idx][2 * i:2 * i + 2]
    return out


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's bucket of each n = j - i, one number at a time."""
    n = np.asarray(relative_position, dtype=np.int64)
    per_direction = num_buckets // 2 if bidirectional else num_buckets
    exact = per_direction // 2
    out = np.zeros(n.shape, dtype=np.int64)
    for idx in np.ndindex(*n.shape):
        rel = int(n[idx])
        bucket = per_direction if bidirectional and rel > 0 else 0  # keys after the query: the upper half
        r = abs(rel) if bidirectional else max(-rel, 0)
        if r < exact:
            bucket += r  # near: one bucket per distance
        else:  # far: logarithmic in r, up to max_distance
            far = exact + int(math.log(r / exact) / math.log(max_distance / exact) * (per_direction - exact))
            bucket += min(far, per_direction - 1)
        out[idx] = bucket
    return out
