"""The default scale is taken from the values' width, 1/sqrt(d_v), instead of the keys', 1/sqrt(d_k).

Caught by SDPA-4: the scale keeps the scores Q K^T, sums of d_k products, at unit variance, so it is
1/sqrt(d_k) whatever the values' width. The two agree whenever d_v = d_k (self-attention's usual
case, and every test that draws one head size for both), so only inputs with d_v != d_k tell them
apart; SDPA-1 and SDPA-9 draw those too.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "taking the default scale from the values' width, 1/sqrt(d_v), instead of the keys' width, 1/sqrt(d_k)"
CAUGHT_BY = "SDPA-4"
ALSO_CAUGHT_BY = ("SDPA-1",)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, return_lse=False,
                                 dropout_p=0.0, generator=None):
    if scale is None:
        scale = _default_scale(np.shape(v)[-1])  # BUG: d_v = v.shape[-1]; the scores' width is d_k = q.shape[-1]
    return _base.scaled_dot_product_attention(q, k, v, mask, is_causal, scale, bias, window_size, q_segment_ids,
                                              kv_segment_ids, softcap, sinks, return_lse, dropout_p, generator)


_base.rewire(globals())
