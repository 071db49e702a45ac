"""The boolean mask made additive as (1 - m) · (-inf): 0 · (-inf) is NaN in every allowed cell.

Caught by MASK-8: an all-True mask must equal no mask. The hidden cells get -inf as meant, but
the allowed ones get (1 - 1) · (-inf) = 0 · (-inf) = NaN, so every row with a mask comes out NaN
(ONNX's Attention tests pin this conversion as a known pitfall). The additive form is
`where(m, 0, -inf)`.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("turning the boolean mask into an additive one as (1 - mask) * -inf, which is 0 * -inf = NaN in every "
       "allowed cell, instead of where(mask, 0, -inf)")
CAUGHT_BY = "MASK-8"
ALSO_CAUGHT_BY = ("MASK-1", "MASK-4", "MASK-5")


def _attention_parts(q, k, mask, is_causal, scale, bias, window_size, q_segment_ids, kv_segment_ids, softcap,
                     sinks):
    scores, visible, sink = _base._attention_parts(q, k, None, is_causal, scale, bias, window_size, q_segment_ids,
                                                   kv_segment_ids, softcap, sinks)
    if mask is not None:
        _base._attention_parts(q, k, mask, is_causal, scale, None, None, None, None, None, None)  # the mask's checks
        with np.errstate(invalid="ignore"):
            scores = scores + (1 - np.asarray(mask).astype(scores.dtype)) * -np.inf   # BUG: NaN where allowed
        visible = visible & ~np.isneginf(scores)
    return scores, visible, sink


_base.rewire(globals())
