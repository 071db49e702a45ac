"""LayerNorm takes one mean and variance over the whole tensor instead of per row.

Caught by LN-4: a sample's output must not depend on the rest of the batch; with statistics
over every axis, changing one row changes all of them.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "computing one LayerNorm mean and variance over every axis of the tensor (x.mean(), x.var()) instead of per row over the last axis"
CAUGHT_BY = "LN-4"


def _moments(x):
    mean = x.mean(keepdims=True)   # BUG: axis=None
    centred = x - mean
    var = (centred * centred).mean(keepdims=True)
    return mean, var


_base.rewire(globals())
