"""The mask is applied by multiplying the scores (hidden scores become 0, not -inf).

Caught by MASK-1: a hidden key with score 0 still gets weight exp(0 - max) / sum, so the weight
on a pad key is not 0 and pad tokens leak into the output.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("masking by multiplying the scores by the mask, so a hidden key gets score 0 "
       "(and a positive weight) instead of -inf (and weight 0)")
CAUGHT_BY = "MASK-1"
ALSO_CAUGHT_BY = ("MASK-7",)   # an appended hidden key still takes weight


def _masked_softmax(scores, visible):
    scores = scores * visible   # BUG: zero, not -inf, for hidden keys
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


_base.rewire(globals())
