"""LayerNorm divides by the root mean square and never subtracts the mean (RMSNorm, not LayerNorm).

Caught by LN-2: with gamma = 1 and beta = 0 every row must have mean 0; dividing by
sqrt(mean(x^2) + eps) without centring keeps the row's mean (scaled).
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _layer_norm_inputs

BUG = "normalising by the root mean square without subtracting the mean (RMSNorm instead of LayerNorm)"
CAUGHT_BY = "LN-2"
ALSO_CAUGHT_BY = ("LN-5",)   # LN(x + c) != LN(x) without centring


def layer_norm(x, gamma, beta, eps=1e-5):
    x, gamma, beta = _layer_norm_inputs(x, gamma, beta)
    ms = (x * x).mean(axis=-1, keepdims=True)   # BUG: no mean subtracted
    return gamma * x / np.sqrt(ms + float(eps)) + beta


_base.rewire(globals())
