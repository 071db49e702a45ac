"""The log-sum-exp of each attention row, and merging partial results by it (split-KV decoding, ring attention;
Milakov & Gimelshein 2018, Dao et al. 2022).

    lse_i = log sum_{j visible} exp(S_ij)  =  m_i + log sum_{j visible} exp(S_ij - m_i),   m_i = max_j S_ij
    lse_i = -inf for a row with no visible key  (the log of an empty sum)

    S ∈ R^{L_q × L_k}   the scores the softmax sees (scaled, capped, biased); P_ij = exp(S_ij - lse_i)

Attention over a key set K = K_1 ∪ K_2 (disjoint) is a weighted mean of the two partial results,
each weighted by its share of the total denominator:

    lse = log(exp(lse_1) + exp(lse_2))
    out = exp(lse_1 - lse) · out_1 + exp(lse_2 - lse) · out_2

which is how FlashAttention's split-KV decoding and ring attention combine the pieces they compute
on separate blocks or devices. A half that saw no key has lse = -inf and weight exp(-inf) = 0.
"""

import numpy as np


# --8<-- [start:log_sum_exp]
def log_sum_exp(scores: np.ndarray, allowed: np.ndarray, sink=None) -> np.ndarray:
    """lse_i = m_i + log sum_{j allowed} exp(S_ij - m_i) (plus exp(sink) inside the sum); -inf when nothing is; (..., L_q)."""
    s = np.where(allowed, scores, -np.inf)  # (..., L_q, L_k)
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)  # (..., L_q, 1): the row maximum keeps exp() from overflowing
    if sink is not None:
        m = np.maximum(m, sink)  # the sink (..., 1, 1) joins the denominator
    m = np.where(np.isfinite(m), m, 0.0)  # a row with nothing: log(0) = -inf below, without -inf - -inf
    z = np.exp(s - m).sum(axis=-1, keepdims=True)  # (..., L_q, 1)
    if sink is not None:
        z = z + np.exp(sink - m)
    with np.errstate(divide="ignore"):
        return (m + np.log(z))[..., 0]  # (..., L_q); log(0) = -inf for a dead row
# --8<-- [end:log_sum_exp]


# --8<-- [start:merge_attention]
def merge_attention(out1, lse1, out2, lse2):
    """Attention over two disjoint key sets from each one's (out (..., L_q, d_v), lse (..., L_q)); -> (out, lse)."""
    out1, lse1, out2, lse2 = (np.asarray(x) for x in (out1, lse1, out2, lse2))
    check_merge(out1, lse1, out2, lse2)
    m = np.maximum(lse1, lse2)  # (..., L_q)
    m = np.where(np.isfinite(m), m, 0.0)  # both halves saw nothing: weights exp(-inf) = 0
    w1, w2 = np.exp(lse1 - m), np.exp(lse2 - m)  # each half's share of the denominator, up to exp(m)
    total = w1 + w2
    with np.errstate(divide="ignore"):
        lse = m + np.log(total)  # log(exp(lse1) + exp(lse2)); -inf when both are -inf
    safe = np.where(total > 0, total, 1.0)
    out = (w1 / safe)[..., None] * out1 + (w2 / safe)[..., None] * out2  # (..., L_q, d_v)
    return out, lse
# --8<-- [end:merge_attention]


def check_merge(out1, lse1, out2, lse2) -> None:
    """out_k (..., L_q, d_v) and lse_k (..., L_q), the two halves of the same shapes; ValueError naming them."""
    if np.shape(out1) != np.shape(out2) or np.shape(lse1) != np.shape(lse2):
        raise ValueError(f"the two partial results differ in shape: out {np.shape(out1)} and {np.shape(out2)}, "
                         f"lse {np.shape(lse1)} and {np.shape(lse2)}")
    if len(np.shape(out1)) < 1 or np.shape(out1)[:-1] != np.shape(lse1):
        raise ValueError(f"lse must have out's shape without its last axis: out {np.shape(out1)}, lse {np.shape(lse1)}")
