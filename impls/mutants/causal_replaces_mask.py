"""Given a mask and is_causal together, the causal mask is used alone: the explicit mask is dropped.

Caught by MASK-5: padding combined with causal must be the logical AND; with causal alone every query
sees the pad keys before it. PyTorch's nn.MultiheadAttention does this when given both (its is_causal
is a hint that attn_mask is the causal mask, and its fast path then runs causal attention alone).
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _broadcast_mask, _causal_visible

BUG = "using the causal mask alone when a mask and is_causal are both given (the explicit mask is dropped, not ANDed)"
CAUGHT_BY = "MASK-5"


def _visible(mask, is_causal, shape):
    L_q, L_k = shape[-2:]
    visible = np.ones(shape, dtype=bool)
    if is_causal:
        return visible & _causal_visible(L_q, L_k)   # BUG: the mask ignored once is_causal is set
    if mask is not None:
        visible = visible & _broadcast_mask(mask, shape)
    return visible


_base.rewire(globals())
