"""With a bias, the mask is folded into it as a finite minimum: a query that sees no key gets the mean of V.

A common way to support `bias=` is to turn the boolean mask into an additive one and add the bias to it.
With a finite fill (the dtype's minimum, as in Hugging Face's sdpa path) a row whose keys are all hidden
has equal scores everywhere, so its softmax is uniform and it outputs the mean of V instead of 0. Without a
bias, and on every row that sees a key, this code is right: only a dead row with a bias shows the bug.
Caught by MASK-4 (a query that sees no key outputs exactly 0, with a bias too).
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("with bias=, the mask is folded into the bias as a finite minimum, so a query whose keys are all "
       "hidden gets equal scores and outputs the mean of V instead of 0")
CAUGHT_BY = "MASK-4"


def _attention_parts(q, k, mask, is_causal, scale, bias, window_size, q_segment_ids, kv_segment_ids, softcap,
                     sinks):
    scores, visible, sink = _base._attention_parts(q, k, mask, is_causal, scale, bias, window_size, q_segment_ids,
                                                   kv_segment_ids, softcap, sinks)
    if bias is not None:
        dead = ~visible.any(axis=-1, keepdims=True)
        scores = np.where(dead, 0.0, scores)   # BUG: every hidden score the same finite minimum: a uniform row
        visible = visible | dead
    return scores, visible, sink


_base.rewire(globals())
