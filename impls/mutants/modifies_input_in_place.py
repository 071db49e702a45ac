"""Attention scales q in place (q *= scale), modifying the caller's array.

Caught by ERR-2: inputs must never be modified; after one call the caller's q has been
multiplied by 1/sqrt(d_k), and a second call on the same array gives a different result.
"""
import math

import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "scaling the query in place, q *= scale, which overwrites the caller's array"
CAUGHT_BY = "ERR-2"


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                      q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, dropout_p=0.0, generator=None):
    q = np.asarray(q)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    q *= scale   # BUG: in place
    return _base.attention_weights(q, k, mask, is_causal, scale=1.0, bias=bias, window_size=window_size,
                                   q_segment_ids=q_segment_ids, kv_segment_ids=kv_segment_ids, softcap=softcap, sinks=sinks, dropout_p=dropout_p,
                                   generator=generator)


_base.rewire(globals())
