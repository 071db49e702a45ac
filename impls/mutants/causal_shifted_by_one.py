"""The causal mask is shifted by one: query i also sees key i + 1.

Caught by MASK-2: the weight just above the diagonal must be exactly 0, and the output at
position i must not change when token i + 1 changes.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "an off-by-one causal mask, j <= i + 1, which lets every token peek at the next one"
CAUGHT_BY = "MASK-2"


def _causal_visible(L_q, L_k):
    i = np.arange(L_q)[:, None]
    j = np.arange(L_k)[None, :]
    return j <= i + 1 + (L_k - L_q)   # BUG: + 1


_base.rewire(globals())
