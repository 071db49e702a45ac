"""When d_model % num_heads != 0, d_k = D // H is used and the leftover features are dropped.

Caught by MHA-2: (d_model, num_heads) = (512, 7) must raise ValueError naming both numbers;
here it silently returns a result computed from only the first 7 * 73 = 511 features.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _check_mha, _project, _require_int, _require_ndim

BUG = ("computing d_k = d_model // num_heads without checking that it divides, and silently "
       "dropping the last d_model - num_heads * d_k features instead of raising ValueError")
CAUGHT_BY = "MHA-2"


def _head_dim(d_model, num_heads):
    num_heads = _require_int("num_heads", num_heads, 1)
    return d_model // num_heads   # BUG: no divisibility check


def split_heads(x, num_heads):
    x = np.asarray(x)
    _require_ndim("x", x, 2)
    *lead, L, D = x.shape
    d_k = _head_dim(D, num_heads)
    x = x[..., : num_heads * d_k]   # BUG: the leftover features vanish
    return x.reshape(*lead, L, num_heads, d_k).swapaxes(-2, -3).copy()


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
    query, key, value = np.asarray(query), np.asarray(key), np.asarray(value)
    _check_mha(query, key, value, weights, num_heads)
    q = split_heads(_project(query, weights, "q"), num_heads)
    k = split_heads(_project(key, weights, "k"), num_heads)
    v = split_heads(_project(value, weights, "v"), num_heads)
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
    kept = merge_heads(heads).shape[-1]   # BUG: only the first H * d_k rows of W_O are used
    w_o = {"w_o": np.asarray(weights["w_o"])[:kept], "b_o": weights.get("b_o")}
    return _project(merge_heads(heads), w_o, "o")


_base.rewire(globals())
