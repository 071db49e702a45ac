"""LayerNorm multiplies by beta and adds gamma: the two affine parameters are swapped.

Caught by LN-3: gamma = 1, beta = 0 must be the identity affine (here it multiplies by 0 and adds 1);
gamma scales and beta shifts.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _layer_norm_inputs, _moments

BUG = "swapping gamma and beta: beta * x_hat + gamma instead of gamma * x_hat + beta"
CAUGHT_BY = "LN-3"


def layer_norm(x, gamma, beta, eps=1e-5):
    x, gamma, beta = _layer_norm_inputs(x, gamma, beta)
    mean, var = _moments(x)
    return beta * (x - mean) / np.sqrt(var + float(eps)) + gamma   # BUG: gamma and beta swapped


_base.rewire(globals())
