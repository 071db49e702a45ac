"""Attention's backward pass recomputing the weights with an unguarded softmax: 0/0 on rows that see nothing.

Caught by GRAD-3: a query with no visible key must get exactly zero gradients; recomputing
P = exp(S - max) / sum with every score at -inf gives NaN there, and the NaN spreads to dk, dv.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "the backward pass's softmax recomputed with -inf fills and no guard, NaN on fully masked rows"
CAUGHT_BY = "GRAD-3"


def scaled_dot_product_attention_backward(dout, q, k, v, mask=None, is_causal=False, scale=None):
    q, k, v, dout = np.asarray(q), np.asarray(k), np.asarray(v), np.asarray(dout)
    L_q, L_k = q.shape[-2], k.shape[-2]
    shape = _batch_shape(q=q, k=k) + (L_q, L_k)
    scale = _default_scale(q.shape[-1]) if scale is None else float(scale)
    with np.errstate(invalid="ignore"):
        s = np.where(_visible(mask, bool(is_causal), shape), _scores(q, k, scale), -np.inf)
        e = np.exp(s - s.max(axis=-1, keepdims=True))   # BUG: -inf - -inf = NaN on a dead row
        p = e / e.sum(axis=-1, keepdims=True)
    ds = _softmax_backward(p, dout @ np.swapaxes(v, -1, -2)) * scale
    dq, dk, dv = ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ dout
    return _unbroadcast(dq, q.shape), _unbroadcast(dk, k.shape), _unbroadcast(dv, v.shape)


_base.rewire(globals())
