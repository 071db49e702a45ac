"""The sink is given a value: its share of the weight brings back the first key's value instead of nothing.

Caught by SOFT-2: a sink joins the softmax's denominator and carries no value, so the output
is sum_j P_ij v_j with rows of P summing to less than 1. Here the sink's column is kept and
multiplied by a copy of v[0] (the sink implemented as a prepended token), so the output is
pulled towards v[0] instead of towards 0.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _check_lengths, _check_qk

BUG = ("giving the sink a value: its share of the weight, 1 - sum_j P_ij, multiplies the first key's value "
       "v[0] (a sink implemented as a prepended token) instead of contributing nothing")
CAUGHT_BY = "SOFT-2"


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, return_lse=False,
                                 dropout_p=0.0, generator=None):
    result = _base.scaled_dot_product_attention(q, k, v, mask, is_causal, scale, bias, window_size, q_segment_ids,
                                                kv_segment_ids, softcap, sinks, return_lse, dropout_p, generator)
    if sinks is None:
        return result
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    p = attention_weights(q, k, mask, is_causal, scale, bias, window_size, q_segment_ids, kv_segment_ids,
                          softcap, sinks)
    share = 1.0 - p.sum(axis=-1, keepdims=True)   # the sink's weight
    out = (result[0] if return_lse else result) + share * v[..., :1, :]   # BUG: the sink should carry no value
    return (out, result[1]) if return_lse else out


_base.rewire(globals())
