"""Dropout applied to the scores before the softmax instead of to the weights after it.

Caught by DROP-2: dropout acts on the attention weights, P' = P * M / (1 - p). Zeroing scores
(and scaling the rest) before the softmax only reshuffles the weights, which the softmax then
renormalises: no weight ends at 0, the rows still sum to 1, and the drop fraction is about 0.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _attention_parts, _check_dropout_p, _masked_softmax, _masked_softmax_with_sink

BUG = ("applying dropout to the scores before the softmax (a dropped score becomes 0, not a dropped weight), "
       "so the softmax renormalises and no attention weight is dropped")
CAUGHT_BY = "DROP-2"


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                      q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, dropout_p=0.0, generator=None):
    q, k = np.asarray(q), np.asarray(k)
    scores, visible, sink = _attention_parts(q, k, mask, is_causal, scale, bias, window_size, q_segment_ids,
                                             kv_segment_ids, softcap, sinks)
    dropout_p = _check_dropout_p(dropout_p)
    if dropout_p:
        rng = np.random.default_rng() if generator is None else generator
        keep = rng.random(scores.shape) >= dropout_p
        scores = np.where(keep, scores / (1 - dropout_p), 0)   # BUG: dropout on the scores, before the softmax
    if sink is not None:
        return _masked_softmax_with_sink(scores, visible, sink)
    return _masked_softmax(scores, visible)


_base.rewire(globals())
