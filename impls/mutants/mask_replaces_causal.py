"""Given a mask and is_causal together, the mask is used alone: is_causal is silently dropped.

Caught by MASK-5: padding combined with causal must be the logical AND; with the mask alone every
query sees the future keys the padding mask leaves visible. Libraries do this where the causal flag
is a hint that the mask *is* the causal mask, or where a model's mask, once given, replaces the one
its causal flag would have built.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _broadcast_mask, _causal_visible

BUG = "using the explicit mask alone when a mask and is_causal are both given (the causal mask is dropped, not ANDed)"
CAUGHT_BY = "MASK-5"


def _visible(mask, is_causal, shape):
    L_q, L_k = shape[-2:]
    visible = np.ones(shape, dtype=bool)
    if mask is not None:
        return visible & _broadcast_mask(mask, shape)   # BUG: is_causal ignored once a mask is given
    if is_causal:
        visible = visible & _causal_visible(L_q, L_k)
    return visible


_base.rewire(globals())
