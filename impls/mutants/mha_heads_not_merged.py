"""Multi-head attention returns the heads' outputs without merging them or applying W_O.

Caught by MHA-1: the output must have shape (B, L_q, D); the per-head outputs have shape
(B, H, L_q, d_k).
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _check_mha, _project

BUG = "returning the per-head outputs (B, H, L, d_k) instead of merging them and applying W_O"
CAUGHT_BY = "MHA-1"


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
    query, key, value = np.asarray(query), np.asarray(key), np.asarray(value)
    _check_mha(query, key, value, weights, num_heads)
    q = split_heads(_project(query, weights, "q"), num_heads)
    k = split_heads(_project(key, weights, "k"), num_heads)
    v = split_heads(_project(value, weights, "v"), num_heads)
    return scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)   # BUG: no merge, no W_O


_base.rewire(globals())
