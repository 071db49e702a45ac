"""The log-sum-exp is taken of the unscaled scores Q K^T instead of the scores the softmax sees, Q K^T · scale.

Caught by LSE-1: lse must be the log of the softmax's own denominator, so that P = exp(S - lse)
and two partial results merge by it; without the scale it is off by a factor sqrt(d_k) in the
exponent, and merges weigh the halves wrongly.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _attention_parts, _log_sum_exp

BUG = ("taking the log-sum-exp of the unscaled scores Q K^T instead of the scaled scores Q K^T * scale the "
       "softmax normalises")
CAUGHT_BY = "LSE-1"
ALSO_CAUGHT_BY = ("LSE-2",)  # merging by a wrong lse weighs the two halves wrongly


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, return_lse=False,
                                 dropout_p=0.0, generator=None):
    out = _base.scaled_dot_product_attention(q, k, v, mask, is_causal, scale, bias, window_size, q_segment_ids,
                                             kv_segment_ids, softcap, sinks, dropout_p=dropout_p, generator=generator)
    if not return_lse:
        return out
    q, k = np.asarray(q), np.asarray(k)
    scores, visible, sink = _attention_parts(q, k, mask, is_causal, 1.0, bias, window_size,   # BUG: scale 1
                                             q_segment_ids, kv_segment_ids, softcap, sinks)
    return out, _log_sum_exp(scores, visible, sink)


_base.rewire(globals())
