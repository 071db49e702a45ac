"""LayerNorm adds eps to the standard deviation instead of to the variance inside the root.

Caught by LN-1: the formula is (x - mean) / sqrt(var + eps); (x - mean) / (sqrt(var) + eps)
differs by about eps / (2 * std) relatively, which float64 tolerance sees.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _layer_norm_inputs, _moments

BUG = "dividing by sqrt(var) + eps instead of sqrt(var + eps)"
CAUGHT_BY = "LN-1"


def layer_norm(x, gamma, beta, eps=1e-5):
    x, gamma, beta = _layer_norm_inputs(x, gamma, beta)
    mean, var = _moments(x)
    return gamma * (x - mean) / (np.sqrt(var) + float(eps)) + beta   # BUG: eps outside


_base.rewire(globals())
