"""Hidden scores are filled with -inf and the softmax has no guard: a fully masked row is NaN.

Caught by MASK-4: a query with no visible key must output exactly 0; here its row is
exp(-inf - (-inf)) = NaN, and the NaN spreads into the output.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("filling hidden scores with -inf and taking a plain softmax, so a query that sees "
       "no key gets max = -inf and NaN weights (lecture note 1's code) instead of zeros")
CAUGHT_BY = "MASK-4"


def _masked_softmax(scores, visible):
    filled = np.where(visible, scores, -np.inf)
    e = np.exp(filled - filled.max(axis=-1, keepdims=True))   # BUG: -inf - -inf = NaN
    return e / e.sum(axis=-1, keepdims=True)


_base.rewire(globals())
