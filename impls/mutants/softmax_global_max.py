"""The softmax is stabilised by the maximum over the whole tensor, not by each row's maximum.

Caught by SDPA-5: each row must be stabilised by its own maximum; a row whose scores are far
below another row's maximum underflows to exp(...) = 0 everywhere and its weights are lost.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "subtracting the global maximum of all scores (scores.max()) before exp instead of each row's own maximum"
CAUGHT_BY = "SDPA-5"
ALSO_CAUGHT_BY = ("SDPA-8",)   # one max over every batch and head: a large slice underflows the others


def _masked_softmax(scores, visible):
    filled = np.where(visible, scores, -np.inf)
    top = filled.max() if visible.any() else 0   # BUG: one max for every row
    e = np.where(visible, np.exp(filled - top), 0)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1)


_base.rewire(globals())
