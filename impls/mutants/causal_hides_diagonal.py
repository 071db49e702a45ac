"""The causal mask also hides the diagonal: query i sees only keys j < i.

Caught by MASK-2: is_causal=True must equal the explicit lower-triangular mask (diagonal
included); here a token cannot attend to itself and the first row sees nothing.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "building the causal mask with j < i (strict) instead of j <= i, so a token cannot see itself"
CAUGHT_BY = "MASK-2"


def _causal_visible(L_q, L_k):
    i = np.arange(L_q)[:, None]
    j = np.arange(L_k)[None, :]
    return j < i + (L_k - L_q)   # BUG: < instead of <=


_base.rewire(globals())
