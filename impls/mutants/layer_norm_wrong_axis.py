"""LayerNorm takes its mean and variance over axis -2 (positions / batch) instead of the features.

Caught by LN-4: statistics must be per sample over features, so a row's output must not
depend on the other rows of the batch; over axis -2 it does.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "computing the LayerNorm mean and variance over axis -2 (across samples, like BatchNorm) instead of the last (feature) axis"
CAUGHT_BY = "LN-4"


def _moments(x):
    mean = x.mean(axis=-2, keepdims=True)   # BUG: axis -2
    centred = x - mean
    var = (centred * centred).mean(axis=-2, keepdims=True)
    return mean, var


_base.rewire(globals())
