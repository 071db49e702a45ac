"""Multi-head attention applies W_O but forgets the output bias b_O.

Caught by MHA-5: with biases the formula is Concat(heads) W^O + b_O; the output is off by
exactly b_O.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _check_mha, _project

BUG = "multiplying by W_O but never adding the output bias b_O"
CAUGHT_BY = "MHA-5"


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
    query, key, value = np.asarray(query), np.asarray(key), np.asarray(value)
    _check_mha(query, key, value, weights, num_heads)
    q = split_heads(_project(query, weights, "q"), num_heads)
    k = split_heads(_project(key, weights, "k"), num_heads)
    v = split_heads(_project(value, weights, "v"), num_heads)
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
    return _project(merge_heads(heads), {"w_o": weights["w_o"]}, "o")   # BUG: b_o dropped


_base.rewire(globals())
