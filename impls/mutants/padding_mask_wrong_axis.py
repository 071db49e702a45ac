"""The mask's last two axes are swapped, so a (B, 1, 1, L_k) padding mask hides queries, not keys.

Caught by MASK-5: the shapes (L_k,), (B, 1, 1, L_k) and (B, H, L_q, L_k) must broadcast and
agree; with the axes swapped a padding mask (B, 1, 1, L_k) acts as (B, 1, L_k, 1), a mask
over queries, and disagrees with the full mask it should equal.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("broadcasting a padding mask over the wrong axis: treating the mask as (..., L_k, L_q), "
       "so (B, 1, 1, L_k) hides query rows instead of key columns")
CAUGHT_BY = "MASK-5"
ALSO_CAUGHT_BY = ()   # a padded batch (VAR-3) is judged on its own attention: the bug is MASK-5's alone


def _broadcast_mask(mask, shape):
    mask = np.asarray(mask)
    if mask.ndim >= 2:
        mask = np.swapaxes(mask, -1, -2)   # BUG
    return _base._broadcast_mask(mask, shape)


_base.rewire(globals())
