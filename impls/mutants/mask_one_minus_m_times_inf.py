"""The boolean mask made additive as (1 - m) · (-inf): 0 · (-inf) is NaN in every allowed cell.

Caught by MASK-8: an all-True mask must equal no mask. The hidden cells get -inf as meant, but
the allowed ones get (1 - 1) · (-inf) = 0 · (-inf) = NaN, so every row with a mask comes out NaN
(ONNX's Attention tests pin this conversion as a known pitfall). The additive form is
`where(m, 0, -inf)`.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _attention_parts, _masked_softmax, _masked_softmax_with_sink

BUG = ("turning the boolean mask into an additive one as (1 - mask) * -inf, which is 0 * -inf = NaN in every "
       "allowed cell, instead of where(mask, 0, -inf)")
CAUGHT_BY = "MASK-8"
ALSO_CAUGHT_BY = ("MASK-1", "MASK-4", "MASK-5", "MASK-9")


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                      q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None):
    q, k = np.asarray(q), np.asarray(k)
    scores, visible, sink = _attention_parts(q, k, None, is_causal, scale, bias, window_size, q_segment_ids,
                                             kv_segment_ids, softcap, sinks)
    if mask is not None:
        _attention_parts(q, k, mask, is_causal, scale)  # the mask's own checks
        with np.errstate(invalid="ignore"):
            scores = scores + (1 - np.asarray(mask).astype(scores.dtype)) * -np.inf   # BUG: NaN where allowed
        visible = visible & ~np.isneginf(scores)
    if sink is not None:
        return _masked_softmax_with_sink(scores, visible, sink)
    return _masked_softmax(scores, visible)


_base.rewire(globals())
