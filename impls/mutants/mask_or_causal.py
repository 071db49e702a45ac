"""A mask and is_causal together are combined with OR instead of AND.

Caught by MASK-5: padding combined with causal must be the logical AND; with OR a query sees
every non-pad key, future ones included, and every past key, pads included.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _broadcast_mask, _causal_visible

BUG = "combining the explicit mask and the causal mask with OR (either allows) instead of AND (both must allow)"
CAUGHT_BY = "MASK-5"


def _visible(mask, is_causal, shape):
    L_q, L_k = shape[-2:]
    if mask is not None and is_causal:
        return _broadcast_mask(mask, shape) | _causal_visible(L_q, L_k)   # BUG: |
    visible = np.ones(shape, dtype=bool)
    if is_causal:
        visible = visible & _causal_visible(L_q, L_k)
    if mask is not None:
        visible = visible & _broadcast_mask(mask, shape)
    return visible


_base.rewire(globals())
