"""Causal attention over a paged cache aligned top-left: query i sees tokens 0 .. i of its sequence.

Caught by EFF-7: the L_q queries are the last L_q positions of their sequence, so query i sees
tokens j <= i + seq_len - L_q (bottom-right). Top-left, a decode step (L_q = 1) sees only the
first token, not the whole cache, and no longer matches the last row of a prefill.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("aligning causal attention over a paged cache top-left (query i sees tokens j <= i) instead of "
       "bottom-right (j <= i + seq_len - L_q), so a decode step sees only the first token")
CAUGHT_BY = "EFF-7"
ALSO_CAUGHT_BY = ("EFF-6",)


def _paged_causal(L_q, seq_len):
    return np.arange(seq_len)[None, :] <= np.arange(L_q)[:, None]   # BUG: the offset seq_len - L_q is missing


_base.rewire(globals())
