"""Hidden scores are filled with -1e9: a fully masked row gets uniform weights, the mean of V.

Caught by MASK-4: a query with no visible key must output exactly 0; with a finite fill all
its scores are equal and the softmax spreads weight 1/L_k over every (hidden) key.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("filling hidden scores with a finite number (-1e9 in lecture note 2's code; -1e4 or the dtype's "
       "minimum alike) with no guard for a query that sees no key: all its scores are then equal, so it gets "
       "uniform weights and outputs the mean of V instead of 0")
CAUGHT_BY = "MASK-4"


def _masked_softmax(scores, visible):
    filled = np.where(visible, scores, -1e9)   # BUG: finite fill, no empty-row guard
    e = np.exp(filled - filled.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


_base.rewire(globals())
