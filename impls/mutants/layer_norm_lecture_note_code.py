"""LayerNorm as in lecture note 2's code: unbiased standard deviation, eps added to the std.

Caught by LN-6: gamma * (x - mean) / (std_unbiased + eps) + beta is not the formula
(x - mean) / sqrt(var_biased + eps); on the row [1, 0, 0, 0] the first output is 1.5, not 1.732.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _layer_norm_inputs

BUG = ("normalising by x.std(ddof=1) + eps, the unbiased standard deviation with eps outside "
       "the square root (lecture note 2's code), instead of sqrt(biased variance + eps)")
CAUGHT_BY = "LN-6"


def layer_norm(x, gamma, beta, eps=1e-5):
    x, gamma, beta = _layer_norm_inputs(x, gamma, beta)
    mean = x.mean(axis=-1, keepdims=True)
    std = x.std(axis=-1, ddof=1, keepdims=True)   # BUG: unbiased, and eps added below
    return gamma * (x - mean) / (std + float(eps)) + beta


_base.rewire(globals())
