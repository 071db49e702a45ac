"""LayerNorm's backward pass without the mean's share: dx = (g - x̂ mean(g x̂)) / σ, no - mean(g).

Caught by GRAD-2: the mean μ depends on every x_i, so moving all of a row by the same amount
must change nothing; the true dx sums to zero over each row, this one does not.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "layer_norm_backward dropping the -mean(dy * gamma) term that the mean's dependence on x contributes"
CAUGHT_BY = "GRAD-2"


def _layer_norm_dx(g, x_hat, inv_std):
    return inv_std * (g - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))   # BUG: no - g.mean(-1)


_base.rewire(globals())
