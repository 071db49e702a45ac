"""A float32-only LayerNorm whose eps is 5000 times the one asked for.

Caught by LN-7: on rows of mean 1e4..1e5 with unit noise, eps = 5e-2 instead of 1e-5 shrinks the
output by about 2.5%, which is some ten times what the naive float32 computation errs there
(its row mean is off by an ulp of 1e5, 0.008, over a spread of 1). A bound sized by max|x|/spread
let this through; one sized by the yardstick and the output does not. (LN-1 catches it too.)
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

DTYPES = ("float32",)
BUG = "adding 5000 x eps to the variance in LayerNorm, in a module that declares only float32"
CAUGHT_BY = "LN-7"


def layer_norm(x, gamma, beta, eps=1e-5):
    return _base.layer_norm(x, gamma, beta, 5000.0 * eps)  # BUG


_base.rewire(globals())
