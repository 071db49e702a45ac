"""merge_heads reshapes (..., H, L, d) straight to (..., L, H*d), without the transpose.

Caught by MHA-3: merge_heads(x)[b, l, h*d:(h+1)*d] is no longer x[b, h, l, :]; rows of
different heads and positions get glued together.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _require_ndim

BUG = ("reshaping (B, H, L, d) to (B, L, H*d) without first transposing it to (B, L, H, d)")
CAUGHT_BY = "MHA-3"


def merge_heads(heads):
    heads = np.asarray(heads)
    _require_ndim("heads", heads, 3)
    *lead, H, L, d = heads.shape
    return heads.reshape(*lead, L, H * d)   # BUG: no swapaxes(-2, -3) first


_base.rewire(globals())
