"""The local window's extents are exclusive: window_size=(left, right) sees left - 1 keys back and right - 1 ahead.

Caught by MALG-1: the contract's window is inclusive, -left <= j - (i + L_k - L_q) <= right, so
(left, 0) shows a query itself and the `left` keys before it (Mistral's and FlashAttention's
convention); here the farthest key on each side is dropped, and (0, 0) hides even the query's own key.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _window_extents

BUG = ("writing the window's bounds with strict inequalities, i - left < j < i + right, which drops the "
       "farthest key on each side: window_size=(2, 0) then sees one key back instead of two")
CAUGHT_BY = "MALG-1"
ALSO_CAUGHT_BY = ("MALG-3",)  # the keywords together no longer equal the AND of the contract's masks


def _window_visible(L_q, L_k, window_size):
    left, right = _window_extents(window_size)
    centre = np.arange(L_q)[:, None] + (L_k - L_q)
    j = np.arange(L_k)[None, :]
    ok = np.ones((L_q, L_k), dtype=bool)
    if left is not None:
        ok = ok & (j > centre - left)   # BUG: > instead of >=
    if right is not None:
        ok = ok & (j < centre + right)  # BUG: < instead of <=
    return ok


_base.rewire(globals())
