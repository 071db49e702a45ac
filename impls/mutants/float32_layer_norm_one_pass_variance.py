"""A float32-only LayerNorm with the one-pass variance E[x^2] - E[x]^2, computed in float32.

Caught by LN-7: for rows of mean 1e4..1e5 with unit noise, E[x^2] is 1e8..1e10 and float32 keeps
about 7 digits, so the subtraction loses every digit of the variance (it can even come out
negative). The module declares only float32, so no float64 run hides behind it.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

DTYPES = ("float32",)
BUG = "computing the variance as mean(x**2) - mean(x)**2 in float32 (a module that declares only float32)"
CAUGHT_BY = "LN-7"


def _moments(x):
    mean = x.mean(axis=-1, keepdims=True)
    var = np.maximum((x * x).mean(axis=-1, keepdims=True) - mean * mean, 0)  # BUG: one-pass formula
    return mean, var


_base.rewire(globals())
