"""LayerNorm computes the variance as E[x^2] - E[x]^2 in the input's dtype.

Caught by LN-7: for float32 rows with mean 1e4 and unit noise, E[x^2] is about 1e8 and the
subtraction loses every significant digit (catastrophic cancellation): the result is garbage
or NaN.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("computing the variance as mean(x**2) - mean(x)**2 in the input dtype, which cancels "
       "catastrophically in float32 when the mean is large compared with the spread")
CAUGHT_BY = "LN-7"


def _moments(x):
    mean = x.mean(axis=-1, keepdims=True)
    var = (x * x).mean(axis=-1, keepdims=True) - mean * mean   # BUG: one-pass formula
    return mean, var


_base.rewire(globals())
