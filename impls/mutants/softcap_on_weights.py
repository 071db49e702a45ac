"""The softcap is applied to the attention weights after the softmax instead of to the scores before it.

Caught by SOFT-1: softcap(S) = cap · tanh(S / cap) acts on the scaled scores; a cap on the
weights, cap · tanh(P / cap), leaves P almost unchanged for a large cap but shrinks every row's
sum below 1 for a small one, and never squashes a large score.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("capping the attention weights after the softmax, cap * tanh(P / cap), instead of the scaled scores "
       "before it, cap * tanh(S / cap)")
CAUGHT_BY = "SOFT-1"

_correct_weights = _base.attention_weights


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                      q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, dropout_p=0.0, generator=None):
    p = _correct_weights(q, k, mask, is_causal, scale, bias, window_size, q_segment_ids, kv_segment_ids, None, sinks)
    if softcap is not None:
        cap = float(softcap)
        p = cap * np.tanh(p / cap)   # BUG: the weights are capped, not the scores
    return _base._dropout(p, dropout_p, generator)


_base.rewire(globals())
