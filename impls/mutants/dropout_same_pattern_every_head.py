"""One dropout pattern drawn for (L_q, L_k) and broadcast over every batch element and head.

Caught by DROP-2: each weight of each batch element and head is kept or dropped on its own draw.
Drawing the mask once, of the last two dimensions only, drops the same query-key pairs in every
head, so the heads' dropout is perfectly correlated.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _check_dropout_p

BUG = ("drawing one dropout mask of shape (L_q, L_k) and broadcasting it over batch and heads, so every head "
       "drops the same weights")
CAUGHT_BY = "DROP-2"


def _dropout(p, dropout_p, generator):
    dropout_p = _check_dropout_p(dropout_p)
    if dropout_p == 0:
        return p
    rng = np.random.default_rng() if generator is None else generator
    keep = rng.random(p.shape[-2:]) >= dropout_p   # BUG: one (L_q, L_k) pattern for every head and batch element
    return np.where(keep, p / (1 - dropout_p), 0).astype(p.dtype, copy=False)


_base.rewire(globals())
