"""Grouped-query attention with query head h reading K/V head h % G instead of h // (H/G).

Caught by MHA-9: consecutive query heads share a K/V head (PyTorch's enable_gqa, ONNX,
every GQA checkpoint); interleaving the groups attaches the wrong keys to half the heads.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "grouped-query attention pairing query head h with K/V head h % G instead of h // (H / G)"
CAUGHT_BY = "MHA-9"


def _kv_head_of(num_heads, num_kv_heads):
    return np.arange(num_heads) % num_kv_heads   # BUG: [0, 1, 0, 1] instead of [0, 0, 1, 1]


_base.rewire(globals())
