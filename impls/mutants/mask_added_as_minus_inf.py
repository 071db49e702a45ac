"""Hidden keys hidden by adding a float mask of 0 and -inf to the scores: NaN + (-inf) is NaN.

Caught by MASK-8: NaN or inf in K of a key hidden from a row does not reach that row. An additive
float mask (PyTorch's float `attn_mask`, Hugging Face's extended attention mask built with -inf) is
right on finite scores: exp(-inf) = 0 removes the key exactly, whatever its score. But a hidden
key's score is still computed and added to, and a NaN there (from a NaN or inf in its K) stays NaN:
the row's maximum and sum become NaN and so does its output. Selecting with `where` (the score is
replaced, not added to) is the fix. Rows with no visible key are zeroed separately here, as the
contract asks, so only the addition is wrong.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("hiding keys by adding a float mask of 0 and -inf to the scores instead of selecting with where: a NaN "
       "in a hidden key's score stays NaN (NaN + -inf is NaN) and turns its row into NaN")
CAUGHT_BY = "MASK-8"


def _masked_softmax(scores, visible):
    s = scores + np.where(visible, 0.0, -np.inf)  # BUG: added, not replaced: NaN + (-inf) is NaN
    row_max = s.max(axis=-1, keepdims=True, initial=-np.inf)
    row_max = np.where(np.isfinite(row_max), row_max, 0)
    e = np.exp(s - row_max)
    total = e.sum(axis=-1, keepdims=True)
    p = e / np.where(total > 0, total, 1)
    return np.where(visible.any(axis=-1, keepdims=True), p, 0).astype(scores.dtype, copy=False)


_base.rewire(globals())
