"""The row maximum taken over no keys: with L_k = 0 the softmax raises instead of giving rows of 0.

Caught by SDPA-9: L_k = 0 is legal, and every query then sees no key, so every output row is exactly
0, as for a fully masked row. NumPy's `max` over an empty axis has no identity and raises
("zero-size array to reduction operation maximum"); `max(..., initial=-inf)` is the fix.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("taking each row's maximum with a plain max over the keys, which raises for L_k = 0 (no keys) instead of "
       "giving every row the output 0")
CAUGHT_BY = "SDPA-9"


def _masked_softmax(scores, visible):
    filled = np.where(visible, scores, -np.inf)
    row_max = filled.max(axis=-1, keepdims=True)   # BUG: a max over no keys raises (no initial=-inf)
    row_max = np.where(np.isfinite(row_max), row_max, 0)
    e = np.where(visible, np.exp(filled - row_max), 0)
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1)


_base.rewire(globals())
