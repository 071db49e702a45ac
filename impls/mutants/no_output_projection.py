"""Multi-head attention returns the concatenated heads without the output projection W_O.

Caught by MHA-5: the formula is Concat(head_1..head_H) W^O + b_O; without it the output
differs from the reference for random weights.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _check_mha, _project

BUG = "returning Concat(head_1..head_H) without multiplying by the output projection W_O (and adding b_O)"
CAUGHT_BY = "MHA-5"


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
    query, key, value = np.asarray(query), np.asarray(key), np.asarray(value)
    _check_mha(query, key, value, weights, num_heads)
    q = split_heads(_project(query, weights, "q"), num_heads)
    k = split_heads(_project(key, weights, "k"), num_heads)
    v = split_heads(_project(value, weights, "v"), num_heads)
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
    return merge_heads(heads)   # BUG: no W_O


_base.rewire(globals())
