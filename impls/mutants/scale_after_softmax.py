"""The 1/sqrt(d_k) scale is applied to the weights after the softmax, not to the scores before it.

`p = softmax(q @ k.T) * scale`: an outsider's reading of "scaled dot-product" that scales the wrong thing.
The weights no longer sum to 1 (they sum to 1/sqrt(d_k)) and are as peaked as unscaled scores make them.
Caught by SDPA-1 (the formula, against the reference) and SDPA-2 (weights sum to 1).
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _attention_parts, _masked_softmax

BUG = "multiplying the softmax's weights by 1/sqrt(d_k) instead of dividing the scores by sqrt(d_k) before it"
CAUGHT_BY = "SDPA-1"
ALSO_CAUGHT_BY = ("SDPA-2",)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                      q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None):
    q, k = np.asarray(q), np.asarray(k)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else float(scale)
    scores, visible, _ = _attention_parts(q, k, mask, is_causal, 1.0, bias, window_size, q_segment_ids,
                                          kv_segment_ids, softcap, sinks)
    return _masked_softmax(scores, visible) * scale  # BUG: the scale belongs inside the softmax


_base.rewire(globals())
