"""The local window is centred on query i itself (top-left) instead of on its position i + (L_k - L_q).

Caught by MALG-1: with fewer queries than keys (a prefill against a cache, one decoding step) the
queries are the last L_q positions; a window around i instead of i + (L_k - L_q) looks at the
start of the cache and leaves the recent keys, the ones a local window exists for, unseen.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _window_extents

BUG = ("centring the local window on the query's index i (top-left, as if the queries were the first L_q "
       "positions) instead of on its position i + (L_k - L_q) among the keys (bottom-right, like causal)")
CAUGHT_BY = "MALG-1"
ALSO_CAUGHT_BY = ("MALG-3",)  # the keywords together no longer equal the AND of the contract's masks


def _window_visible(L_q, L_k, window_size):
    left, right = _window_extents(window_size)
    centre = np.arange(L_q)[:, None]   # BUG: the offset L_k - L_q is missing
    j = np.arange(L_k)[None, :]
    ok = np.ones((L_q, L_k), dtype=bool)
    if left is not None:
        ok = ok & (j >= centre - left)
    if right is not None:
        ok = ok & (j <= centre + right)
    return ok


_base.rewire(globals())
