"""The mask is applied after the softmax by multiplying the weights, with no renormalisation.

Caught by MASK-1: the outputs at real positions must equal those of the unpadded sequence;
here the visible weights still carry the softmax of the hidden keys and sum to less than 1.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("applying the mask after the softmax, weights * mask, so the remaining weights "
       "no longer sum to 1 (the masked keys still took their share of the softmax)")
CAUGHT_BY = "MASK-1"


def _masked_softmax(scores, visible):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    p = e / e.sum(axis=-1, keepdims=True)
    return p * visible   # BUG: hides keys after normalising, no renormalisation


_base.rewire(globals())
