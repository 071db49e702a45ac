"""Scaled dot-product attention (lecture note 1 §2, lecture note 2 §1.2; Vaswani et al. 2017, eq. 1).

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

    Q ∈ R^{L_q × d_k}   one row per query
    K ∈ R^{L_k × d_k}   one row per key
    V ∈ R^{L_k × d_v}   one row per key
    P ∈ [0, 1]^{L_q × L_k}, each row a probability distribution over the visible keys

An optional additive bias B ∈ R^{L_q × L_k} (float, broadcastable) joins the scores
before the softmax, softmax(Q K^T · scale + B): it carries relative position biases
(T5's bucketed table, ALiBi's slopes; `reference.t5_bias`, `reference.alibi`). An entry
of -inf hides its key as a False mask entry would.

Leading dimensions (batch, heads, ...) broadcast. The reference computes in the
dtype it is given: float64 when it serves as the reference, float32 or float16
when the harness runs it as the "naive reference in the same precision" that
the tolerance model compares against.
"""

import math

import numpy as np

from reference.checks import check_attention
from reference.dropout import dropout
from reference.log_sum_exp import log_sum_exp
from reference.mask_algebra import visible_keys
from reference.sinks import sink_column, softmax_with_sink
from reference.softcap import check_softcap, softcap as cap_scores


# --8<-- [start:masked_softmax]
def masked_softmax(scores: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """softmax over the last axis restricted to `allowed`; a row with nothing allowed is all 0.

        P[i, j] = exp(S[i, j] - m_i) / sum_{j' allowed} exp(S[i, j'] - m_i)   if j allowed, else 0
        m_i     = max_{j allowed} S[i, j]     (each row stabilised by its own maximum)
    """
    s = np.where(allowed, scores, -np.inf)  # (..., L_q, L_k), hidden keys at -inf
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)  # (..., L_q, 1); -inf for a row of no keys (L_k = 0)
    m = np.where(np.isfinite(m), m, 0.0)  # a row with no visible key: avoid -inf - -inf
    e = np.exp(s - m)  # exp(-inf) = 0 exactly for hidden keys
    z = e.sum(axis=-1, keepdims=True)  # (..., L_q, 1)
    return np.where(z > 0, e / np.where(z > 0, z, 1.0), 0.0)  # no visible key -> zeros, not NaN
# --8<-- [end:masked_softmax]


# --8<-- [start:attention_weights]
def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                      q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, dropout_p=0.0, generator=None):
    """P = softmax(Q K^T * scale + bias) over visible keys, scale = 1/sqrt(d_k) by default; (..., L_q, L_k).

    Visible: mask AND causal AND window AND same document (reference.mask_algebra.visible_keys).
    softcap: the scaled scores become cap * tanh(S / cap) first (reference.softcap); sinks: one logit
    per head joins each row's denominator (reference.sinks); dropout_p: each weight kept with probability
    1 - p and scaled by 1 / (1 - p), drawn from `generator` (reference.dropout)."""
    scores_shape = check_attention(q, k, mask=mask, bias=bias)
    L_q, L_k = scores_shape[-2:]
    d_k = q.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(d_k)
    scores = (q @ np.swapaxes(k, -1, -2)) * scale  # (..., L_q, d_k) @ (..., d_k, L_k) -> (..., L_q, L_k)
    if softcap is not None:
        scores = cap_scores(scores, check_softcap(softcap))  # before the mask and the bias
    if bias is not None:
        scores = scores + bias  # (..., L_q, L_k); a -inf entry gets weight exp(-inf) = 0, like mask=False
    allowed = visible_keys(mask, is_causal, L_q, L_k, window_size, q_segment_ids, kv_segment_ids)
    if sinks is not None:
        p = softmax_with_sink(scores, allowed, sink_column(sinks, scores_shape))
    else:
        p = masked_softmax(scores, allowed)
    return dropout(p, dropout_p, generator)  # (..., L_q, L_k); p itself when dropout_p = 0
# --8<-- [end:attention_weights]


# --8<-- [start:unseen_values_zeroed]
def unseen_values_zeroed(p: np.ndarray, v: np.ndarray) -> np.ndarray:
    """V with the rows of keys that no query weighs replaced by 0, so that poison there never reaches P V.

        V'[j] = 0   if P[i, j] = 0 for every query i of the slice   (padding, a fully hidden column)
        V'[j] = V[j] otherwise

    P V sums P[i, j] V[j] over the keys, and 0 · NaN = 0 · inf = NaN: a weight of exactly 0 does not
    remove a NaN or inf value on its own. A key some query sees keeps its value (CONTRACT.md, "Poison").
    """
    unseen = (p == 0).all(axis=-2)[..., None]  # (..., L_k, 1): no query of the slice weighs key j
    return np.where(unseen, 0.0, v).astype(v.dtype, copy=False)  # (..., L_k, d_v)
# --8<-- [end:unseen_values_zeroed]


# --8<-- [start:scaled_dot_product_attention]
def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, return_lse=False,
                                 dropout_p=0.0, generator=None):
    """softmax(Q K^T * scale + bias) V; q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v) -> (..., L_q, d_v).

    return_lse=True: (out, lse), lse (..., L_q) the log of each row's softmax denominator (reference.log_sum_exp)."""
    check_attention(q, k, v, mask=mask, bias=bias)
    keywords = dict(mask=mask, is_causal=is_causal, scale=scale, bias=bias, window_size=window_size,
                    q_segment_ids=q_segment_ids, kv_segment_ids=kv_segment_ids, softcap=softcap)
    p = attention_weights(q, k, sinks=sinks, dropout_p=dropout_p, generator=generator, **keywords)  # (..., L_q, L_k)
    v = unseen_values_zeroed(p, v)  # (..., L_k, d_v): 0 · NaN is NaN, so what no query sees is removed first
    out = p @ v  # (..., L_q, L_k) @ (..., L_k, d_v) -> (..., L_q, d_v)
    if not return_lse:
        return out
    scores, allowed = attention_scores(q, k, **keywords)
    sink = None if sinks is None else sink_column(sinks, scores.shape)
    return out, log_sum_exp(scores, allowed, sink)


def attention_scores(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                     q_segment_ids=None, kv_segment_ids=None, softcap=None):
    """The scores the softmax sees (scaled, capped, biased), (..., L_q, L_k), and which keys are visible."""
    scores_shape = check_attention(q, k, mask=mask, bias=bias)
    L_q, L_k = scores_shape[-2:]
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ np.swapaxes(k, -1, -2)) * scale
    if softcap is not None:
        scores = cap_scores(scores, check_softcap(softcap))
    if bias is not None:
        scores = scores + bias
    allowed = visible_keys(mask, is_causal, L_q, L_k, window_size, q_segment_ids, kv_segment_ids)
    return scores, np.broadcast_to(allowed, np.broadcast_shapes(scores.shape, np.shape(allowed)))
# --8<-- [end:scaled_dot_product_attention]
