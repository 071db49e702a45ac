"""The backward pass of scaled dot-product attention: gradients by hand (claims GRAD-2, GRAD-3).

    forward:   S = Q K^T · scale,   P = softmax(S) over the visible keys,   O = P V
    backward, given dO = ∂loss/∂O ∈ R^{L_q × d_v}:
      dV = P^T dO                                  (L_k, d_v)
      dP = dO V^T                                  (L_q, L_k)
      dS = P ⊙ (dP - rowsum(dP ⊙ P))               the softmax's Jacobian, row by row
      dQ = dS K · scale                            (L_q, d_k)
      dK = dS^T Q · scale                          (L_k, d_k)

A hidden key has P = 0, so dS = 0 there: no gradient flows through a masked score, and
a causal output receives none from future positions. A query with no visible key has
an all-zero row of P, so its dQ row and its share of dK, dV are exactly 0, not NaN
(claim GRAD-3). Leading dimensions that q, k or v broadcast over are summed back to
their own shapes, as autograd does.
"""

import numpy as np

from reference.attention import attention_weights
from reference.checks import check_attention, shape_of


def _sum_to_shape(grad, shape):
    """Sum a broadcast gradient back over the dimensions its input was broadcast along."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra else grad
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad


# --8<-- [start:scaled_dot_product_attention_backward]
def scaled_dot_product_attention_backward(dout, q, k, v, mask=None, is_causal=False, scale=None):
    """(dq, dk, dv) of out = softmax(Q K^T · scale) V given dout = ∂loss/∂out; shapes of q, k, v."""
    scores_shape = check_attention(q, k, v, mask=mask)
    out_shape = scores_shape[:-1] + (int(v.shape[-1]),)
    if shape_of(dout) != out_shape:
        raise ValueError(f"dout must have the output's shape {out_shape} (..., L_q, d_v), got {shape_of(dout)}")
    if scale is None:
        scale = 1.0 / np.sqrt(q.shape[-1])
    p = attention_weights(q, k, mask=mask, is_causal=is_causal, scale=scale)  # (..., L_q, L_k); hidden keys 0
    return backward_from_weights(dout, q, k, v, p, scale)


def backward_from_weights(dout, q, k, v, p, scale: float):
    """(dq, dk, dv) given the forward's weights p (..., L_q, L_k) and its scale: the softmax's derivative."""
    dv = np.swapaxes(p, -1, -2) @ dout  # (..., L_k, d_v)
    dp = dout @ np.swapaxes(v, -1, -2)  # (..., L_q, L_k)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))  # (..., L_q, L_k); 0 wherever p is 0
    dq = (ds @ k) * scale  # (..., L_q, d_k)
    dk = (np.swapaxes(ds, -1, -2) @ q) * scale  # (..., L_k, d_k)
    return _sum_to_shape(dq, q.shape), _sum_to_shape(dk, k.shape), _sum_to_shape(dv, v.shape)
# --8<-- [end:scaled_dot_product_attention_backward]


def scaled_dot_product_attention_backward_from(dout, q, k, v, mask=None, is_causal=False, scale=None, *,
                                               attention_weights):
    """scaled_dot_product_attention_backward with the forward's weights from `attention_weights` (another
    implementation's, say: the suite's error carried forward judges a backward pass on the weights it goes with)."""
    scale = 1.0 / np.sqrt(np.shape(q)[-1]) if scale is None else scale
    p = np.asarray(attention_weights(q, k, mask=mask, is_causal=is_causal, scale=scale), dtype=np.float64)
    return backward_from_weights(*(np.asarray(a, dtype=np.float64) for a in (dout, q, k, v)), p, scale)
