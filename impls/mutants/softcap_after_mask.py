"""The softcap is applied after the mask: a hidden key's -inf becomes -cap, a finite score, and gets a weight.

Caught by SOFT-1: softcap(S) = cap · tanh(S / cap) squashes the scaled scores *before* the mask;
a hidden key must keep weight exactly 0. Here the mask fills -inf first and the cap turns it
into tanh(-inf) · cap = -cap, so every hidden key gets a weight of about exp(-cap - max).
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import (_batch_shape, _check_qk, _check_softcap, _default_scale, _masked_softmax,
                                 _masked_softmax_with_sink, _scores, _sink_column, _visible_keys)

BUG = ("applying the softcap after the mask, cap * tanh(masked / cap), so the -inf of a hidden key becomes "
       "-cap and the hidden key gets a weight, instead of capping the scaled scores before the mask")
CAUGHT_BY = "SOFT-1"


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                      q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, dropout_p=0.0, generator=None):
    q, k = np.asarray(q), np.asarray(k)
    _check_qk(q, k)
    L_q, d_k = q.shape[-2:]
    L_k = k.shape[-2]
    shape = _batch_shape(q=q, k=k) + (L_q, L_k)
    visible = _visible_keys(mask, bool(is_causal), shape, window_size, q_segment_ids, kv_segment_ids)
    scale = _default_scale(d_k) if scale is None else float(scale)
    scores = np.broadcast_to(_scores(q, k, scale), shape)
    if softcap is not None:
        cap = _check_softcap(softcap)
        masked = np.where(visible, scores, -np.inf)
        scores = cap * np.tanh(masked / cap)   # BUG: -inf becomes -cap, a finite score
        visible = np.ones(shape, dtype=bool)
    if sinks is not None:
        p = _masked_softmax_with_sink(scores, visible, _sink_column(sinks, shape, scores.dtype))
    else:
        p = _masked_softmax(scores, visible)
    return _base._dropout(p, dropout_p, generator)


_base.rewire(globals())
