"""Projections use x @ W.T (nn.Linear's stored (out, in) orientation) instead of x @ W.

Caught by MHA-5: the contract's weights are in the y = x @ W + b orientation; transposing them
gives a different output from the reference for random (non-symmetric) weights.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "applying the weights as nn.Linear does, x @ W.T, although they are given in the math's x @ W orientation"
CAUGHT_BY = "MHA-5"


def _project(x, weights, which):
    w = np.asarray(weights["w_" + which]).astype(x.dtype, copy=False)
    y = x @ w.T   # BUG: .T
    b = weights.get("b_" + which)
    if b is not None:
        y = y + np.asarray(b).astype(x.dtype, copy=False)
    return y


_base.rewire(globals())
