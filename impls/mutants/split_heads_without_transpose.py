"""split_heads reshapes (..., L, D) straight to (..., H, L, D/H), without the transpose.

Caught by MHA-3: merge_heads(split_heads(x)) no longer gives x back, and a "head" now mixes
features of different positions instead of holding features h*d_k:(h+1)*d_k of each position.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _head_dim, _require_ndim

BUG = ("splitting heads by reshaping (..., L, D) directly to (..., H, L, D/H) "
       "instead of to (..., L, H, D/H) followed by swapping the L and H axes")
CAUGHT_BY = "MHA-3"
ALSO_CAUGHT_BY = ("MHA-4", "MHA-6")   # heads mix features: not H separate projections


def split_heads(x, num_heads):
    x = np.asarray(x)
    _require_ndim("x", x, 2)
    *lead, L, D = x.shape
    d_k = _head_dim(D, num_heads)
    return x.reshape(*lead, num_heads, L, d_k).copy()   # BUG: no transpose


_base.rewire(globals())
