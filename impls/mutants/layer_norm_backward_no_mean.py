"""LayerNorm's backward pass without the mean's share: dx = (g - x̂ mean(g x̂)) / σ, no - mean(g).

Caught by GRAD-2: the mean μ depends on every x_i, so moving all of a row by the same amount
must change nothing; the true dx sums to zero over each row, this one does not.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "layer_norm_backward dropping the -mean(dy * gamma) term that the mean's dependence on x contributes"
CAUGHT_BY = "GRAD-2"


def layer_norm_backward(dy, x, gamma, eps=1e-5):
    x, dy = np.asarray(x), np.asarray(dy)
    gamma = _check_affine("gamma", gamma, x.shape[-1], x.dtype)
    if dy.shape != x.shape:
        raise ValueError(f"dy has shape {dy.shape}, expected x's shape {x.shape}")
    mean, var = _moments(x)
    inv_std = 1.0 / np.sqrt(var + float(eps))
    x_hat = (x - mean) * inv_std
    rows = tuple(range(x.ndim - 1))
    g = dy * gamma
    dx = inv_std * (g - x_hat * (g * x_hat).mean(axis=-1, keepdims=True))   # BUG: no - g.mean(-1)
    return dx, (dy * x_hat).sum(axis=rows), dy.sum(axis=rows)


_base.rewire(globals())
