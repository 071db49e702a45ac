"""The scale taken as |scale|: a negative scale, which is legal, silently becomes a positive one.

Caught by SDPA-10: an explicit scale is used as given, and scale = -s equals scale = s with the keys
negated (attention then prefers the least similar key). Code that takes sqrt(scale) to split it
between q and k, or guards with abs(), turns -s into +s (or NaN) without a word.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("using abs(scale) for an explicit scale, so a negative scale (legal: it reverses which keys are "
       "preferred) acts as a positive one")
CAUGHT_BY = "SDPA-10"


def _scores(q, k, scale):
    return (q @ np.swapaxes(k, -1, -2)) * abs(scale)   # BUG: the sign of an explicit scale is dropped


_base.rewire(globals())
