"""Rotary embedding that pairs feature i with feature i + d/2 (LLaMA's rotate_half layout).

Caught by PE-4: the contract's RoPE rotates interleaved pairs (2i, 2i+1), as the paper
does; the half-split layout is the same rotation on permuted features, so it keeps norms
and relative scores but gives different numbers for the same x.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "rotary embedding on half-split pairs (i, i + d/2) instead of the interleaved pairs (2i, 2i+1)"
CAUGHT_BY = "PE-4"


def _pairs(d):
    return np.arange(d // 2), np.arange(d // 2, d)   # BUG: the rotate_half layout


_base.rewire(globals())
