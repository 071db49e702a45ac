"""The mask's meaning is inverted: True hides a key instead of letting the query attend it.

Caught by MASK-1: with a padding mask that is True on the real tokens, the real tokens are
hidden and only the pads are attended.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _broadcast_mask, _causal_visible

BUG = "reading the boolean mask as True = hide (PyTorch's key_padding_mask convention) instead of True = may attend"
CAUGHT_BY = "MASK-1"


def _visible(mask, is_causal, shape):
    L_q, L_k = shape[-2:]
    visible = np.ones(shape, dtype=bool)
    if is_causal:
        visible = visible & _causal_visible(L_q, L_k)
    if mask is not None:
        visible = visible & ~_broadcast_mask(mask, shape)   # BUG: ~
    return visible


_base.rewire(globals())
