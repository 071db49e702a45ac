"""LayerNorm's default eps is 1e-6 instead of 1e-5.

Caught by LN-1: the default eps is part of the formula; with eps = 1e-6 a unit-variance row
comes out about 4.5e-6 (relative) too large, far beyond float64 tolerance.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "using eps = 1e-6 (a common choice elsewhere) as the default instead of the contract's 1e-5"
CAUGHT_BY = "LN-1"


def layer_norm(x, gamma, beta, eps=1e-6):   # BUG: default 1e-6
    return _base.layer_norm(x, gamma, beta, eps)


_base.rewire(globals())
