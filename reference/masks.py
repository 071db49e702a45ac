"""Masks: which keys each query may see. True means "may attend" (CONTRACT.md).

    causal:   query i sees key j  iff  j <= i + (L_k - L_q)      (bottom-right aligned)
    padding:  query i sees key j  iff  j < length of j's sequence

Bottom-right alignment treats the L_q queries as the *last* L_q positions of
the L_k keys, which is what decoding with a KV cache needs; for L_q == L_k it
is the usual lower triangle. PyTorch's `is_causal` is top-left aligned instead.
"""

import numpy as np


# --8<-- [start:causal_mask]
def causal_mask(L_q: int, L_k: int) -> np.ndarray:
    """M[i, j] = (j <= i + L_k - L_q): bottom-right aligned causal mask, (L_q, L_k) bool."""
    i = np.arange(L_q)[:, None]  # (L_q, 1)
    j = np.arange(L_k)[None, :]  # (1, L_k)
    return j <= i + (L_k - L_q)
# --8<-- [end:causal_mask]


# --8<-- [start:padding_mask]
def padding_mask(lengths, L: int) -> np.ndarray:
    """M[b, 0, 0, j] = (j < lengths[b]): a key-padding mask of shape (B, 1, 1, L), bool.

    Broadcasts over heads and queries, the shape lecture note 2 §3.2 builds with
    `(x != pad_idx).unsqueeze(1).unsqueeze(2)`.
    """
    lengths = np.asarray(lengths)[:, None]  # (B, 1)
    keep = np.arange(L)[None, :] < lengths  # (B, L)
    return keep[:, None, None, :]  # (B, 1, 1, L)
# --8<-- [end:padding_mask]


# --8<-- [start:visible]
def visible(mask, is_causal: bool, L_q: int, L_k: int) -> np.ndarray:
    """Keys each query may see: `mask AND causal`, broadcastable to (..., L_q, L_k), bool."""
    allowed = np.ones((L_q, L_k), dtype=bool)
    if mask is not None:
        allowed = allowed & np.asarray(mask, dtype=bool)
    if is_causal:
        allowed = allowed & causal_mask(L_q, L_k)
    return allowed
# --8<-- [end:visible]
