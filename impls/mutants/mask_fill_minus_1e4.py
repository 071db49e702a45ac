"""Hidden scores pushed down by an additive -1e4 instead of removed: a score above 1e4 comes back.

Caught by MASK-9: large finite values at hidden positions change no visible output. Adding -1e4 to
a hidden score gives it weight exp(-1e4) = 0 for ordinary scores, so most tests pass; but a hidden
key with a score of 3e4 still has 2e4 after the fill and takes the whole row's weight. (Rows with no
visible key are zeroed separately here, as the contract asks, so only the fill is wrong.)
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("hiding a key by adding -1e4 to its score instead of removing it (-inf or where): a hidden score "
       "larger than 1e4 stays large and takes the row's weight")
CAUGHT_BY = "MASK-9"
ALSO_CAUGHT_BY = ("MASK-8",)


def _masked_softmax(scores, visible):
    s = scores + np.where(visible, 0.0, -1e4)   # BUG: a finite fill; a hidden score of 3e4 is still 2e4
    row_max = s.max(axis=-1, keepdims=True, initial=-np.inf)
    row_max = np.where(np.isfinite(row_max), row_max, 0)
    e = np.exp(s - row_max)
    p = e / np.where(e.sum(axis=-1, keepdims=True) > 0, e.sum(axis=-1, keepdims=True), 1)
    return np.where(visible.any(axis=-1, keepdims=True), p, 0).astype(scores.dtype, copy=False)


_base.rewire(globals())
