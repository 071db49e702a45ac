"""Attention sinks: a per-head logit that joins the softmax's denominator and carries no value
(gpt-oss, OpenAI 2025; Xiao et al. 2023's sink token, learnt; FlashAttention's and MLX's `sinks`).

    P_ij = exp(S_ij - m_i) / ( exp(σ - m_i) + Σ_{j' visible} exp(S_ij' - m_i) )   for visible j, else 0
    m_i  = max(σ, max_{j visible} S_ij)

    S ∈ R^{L_q × L_k}   the scores of one head;  σ ∈ R the head's sink logit

The sink is one more column of the softmax whose value is zero: it takes a share
exp(σ - m_i) / (...) of the weight and gives nothing back, so each row of P sums to **less
than 1**, and the output shrinks towards 0 when no key scores well. A row with every key hidden
gives P = 0 and outputs exactly 0 (its denominator is exp(σ - m_i) > 0), and a sink of -inf is no sink.
"""

import numpy as np


# --8<-- [start:softmax_with_sink]
def softmax_with_sink(scores: np.ndarray, allowed: np.ndarray, sink: np.ndarray) -> np.ndarray:
    """P over the visible keys with `sink` (broadcastable to (..., L_q, 1)) in the denominator; (..., L_q, L_k)."""
    s = np.where(allowed, scores, -np.inf)  # (..., L_q, L_k), hidden keys at -inf
    m = np.maximum(s.max(axis=-1, keepdims=True, initial=-np.inf), sink)  # (..., L_q, 1): the sink joins the row maximum
    m = np.where(np.isfinite(m), m, 0.0)  # nothing visible and a sink of -inf: avoid -inf - -inf
    e = np.exp(s - m)  # (..., L_q, L_k)
    z = e.sum(axis=-1, keepdims=True) + np.exp(sink - m)  # (..., L_q, 1): keys plus the sink
    return np.where(z > 0, e / np.where(z > 0, z, 1.0), 0.0)  # the sink's own share is dropped
# --8<-- [end:softmax_with_sink]


def sink_column(sinks, scores_shape) -> np.ndarray:
    """The sink logits as (..., 1, 1), one per head: `sinks` broadcasts to the scores' leading dims (...,)."""
    sinks = np.asarray(sinks)
    if sinks.dtype == np.bool_ or not np.issubdtype(sinks.dtype, np.floating):
        raise ValueError(f"sinks must be a float array of one logit per head, got dtype {sinks.dtype}")
    lead = tuple(scores_shape[:-2])
    try:
        broadcasts = np.broadcast_shapes(sinks.shape, lead) == lead
    except ValueError:
        broadcasts = False
    if not broadcasts:
        raise ValueError(f"sinks of shape {sinks.shape} do not broadcast to the scores' leading dims {lead}")
    return sinks[..., None, None]  # (..., 1, 1)
