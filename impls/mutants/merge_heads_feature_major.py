"""merge_heads concatenates heads feature-major (column c*H + h) instead of head-major (h*d + c).

Caught by MHA-3: merge_heads(x)[b, l, h*d:(h+1)*d] must be head h's output x[b, h, l, :];
here the heads are interleaved feature by feature.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _require_ndim

BUG = ("concatenating the heads in the wrong index order: moving the head axis last, "
       "(B, L, d, H), before reshaping, so feature c of head h lands in column c*H + h "
       "instead of h*d + c")
CAUGHT_BY = "MHA-3"


def merge_heads(heads):
    heads = np.asarray(heads)
    _require_ndim("heads", heads, 3)
    *lead, H, L, d = heads.shape
    return np.moveaxis(heads, -3, -1).reshape(*lead, L, H * d)   # BUG: (L, d, H) order


_base.rewire(globals())
