"""For L_q != L_k the causal mask is aligned top-left (j <= i) instead of bottom-right.

Caught by MASK-3: with a KV cache the L_q queries are the last L_q positions, so query i may
see keys up to i + (L_k - L_q); top-left alignment hides almost the whole cache.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("aligning the causal mask top-left, j <= i (what torch's is_causal does for "
       "non-square shapes), instead of bottom-right, j <= i + (L_k - L_q)")
CAUGHT_BY = "MASK-3"


def _causal_visible(L_q, L_k):
    i = np.arange(L_q)[:, None]
    j = np.arange(L_k)[None, :]
    return j <= i   # BUG: ignores the offset L_k - L_q


_base.rewire(globals())
