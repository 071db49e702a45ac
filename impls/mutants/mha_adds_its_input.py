"""Multi-head attention returns `query + attention(...)`: the residual connection written inside the layer.

An outsider's MultiHeadAttention that does the block's `x + sublayer(x)` itself (as some encoder layers
fold it in): the output is the right multi-head attention plus the query. Caught by MHA-5 (the formula
with biases, against the reference); the masks and variable-length chapters' multi-head tests should not
pay for it again.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _check_mha, _kv_head_of, _project

BUG = "adding the query to the multi-head attention's output (the residual connection inside the layer)"
CAUGHT_BY = "MHA-5"


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None):
    query, key, value = np.asarray(query), np.asarray(key), np.asarray(value)
    G = _check_mha(query, key, value, weights, num_heads, num_kv_heads)
    q = split_heads(_project(query, weights, "q"), num_heads)  # (B, H, L_q, d_k)
    share = _kv_head_of(num_heads, G)
    k = split_heads(_project(key, weights, "k"), G)[..., share, :, :]
    v = split_heads(_project(value, weights, "v"), G)[..., share, :, :]
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
    return query + _project(merge_heads(heads), weights, "o")  # BUG: + query is the block's residual


_base.rewire(globals())
