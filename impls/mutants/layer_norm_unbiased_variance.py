"""LayerNorm with the unbiased (sample) variance, divided by D - 1, with eps inside the square root.

Caught by LN-1: the contract's LayerNorm normalises by the biased (population) variance, the mean of
the squared deviations over the D features, as the paper and every framework's LayerNorm do.
torch.var and torch.std divide by D - 1 unless told otherwise (unbiased=True, correction=1), so
x.var(-1) in a LayerNorm scales every output by sqrt((D - 1) / D): 0.707 at D = 2, 0.968 at D = 16.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _layer_norm_inputs

BUG = ("normalising by the unbiased variance, divided by D - 1 (torch.var's default), instead of the biased "
       "variance divided by D, with eps inside the square root")
CAUGHT_BY = "LN-1"


def layer_norm(x, gamma, beta, eps=1e-5):
    x, gamma, beta = _layer_norm_inputs(x, gamma, beta)
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, ddof=1, keepdims=True)   # BUG: ddof=1 divides by D - 1
    return gamma * (x - mean) / np.sqrt(var + eps) + beta


_base.rewire(globals())
