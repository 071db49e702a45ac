"""Multi-head attention scales the scores by 1/sqrt(d_model) instead of 1/sqrt(d_k).

Caught by MHA-5: the heads' scores are too small by a factor sqrt(H), so the softmax is
too flat and the output differs from the reference's Concat(head_1..head_H) W^O.
"""
import math

import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _check_mha, _project

BUG = ("scaling each head's scores by 1/sqrt(d_model) instead of 1/sqrt(d_k) = "
       "1/sqrt(d_model / num_heads)")
CAUGHT_BY = "MHA-5"


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
    query, key, value = np.asarray(query), np.asarray(key), np.asarray(value)
    _check_mha(query, key, value, weights, num_heads)
    q = split_heads(_project(query, weights, "q"), num_heads)
    k = split_heads(_project(key, weights, "k"), num_heads)
    v = split_heads(_project(value, weights, "v"), num_heads)
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal,
                                         scale=1.0 / math.sqrt(query.shape[-1]))  # BUG
    return _project(merge_heads(heads), weights, "o")


_base.rewire(globals())
