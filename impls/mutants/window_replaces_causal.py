"""A local window replaces the mask and is_causal instead of joining them by AND.

Caught by MALG-3: masks compose by AND, visible = mask AND causal AND window AND documents. Here,
once window_size is given, only the window is applied: window_size=(w, w) with is_causal=True
lets a query see w keys of its future, and a padding mask passed beside the window is dropped.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _document_visible, _visible, _window_visible

BUG = ("applying a given window_size in place of the mask and the causal rule instead of ANDing them: "
       "the window's right extent then reaches into the future under is_causal, and padding is forgotten")
CAUGHT_BY = "MALG-3"


def _visible_keys(mask, is_causal, shape, window_size=None, q_segment_ids=None, kv_segment_ids=None):
    L_q, L_k = shape[-2:]
    if window_size is not None:
        visible = np.broadcast_to(_window_visible(L_q, L_k, window_size), shape)   # BUG: mask and causal dropped
    else:
        visible = _visible(mask, is_causal, shape)
    if q_segment_ids is not None or kv_segment_ids is not None:
        visible = visible & _document_visible(q_segment_ids, kv_segment_ids, L_q, L_k)
    return visible


_base.rewire(globals())
