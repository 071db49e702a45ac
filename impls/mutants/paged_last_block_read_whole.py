"""The last block of a paged cache is read whole: the slots past seq_len join the keys.

Caught by EFF-6: a sequence of seq_len tokens fills ceil(seq_len / S) blocks, the last one only in
part; its remaining slots hold whatever an earlier sequence left there (noise), which must get weight 0.
Reading every slot of the used blocks attends to that noise too.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("reading the last block of a paged cache whole, past seq_len, so the unused slots at its end "
       "(stale or noise keys) are attended to")
CAUGHT_BY = "EFF-6"
ALSO_CAUGHT_BY = ("EFF-7",)


def _sequence_cache(cache, table_row, seq_len):
    blocks = [cache[n] for n in _blocks_of(table_row, seq_len, cache.shape[2])]
    if not blocks:
        return np.zeros((cache.shape[1], 0, cache.shape[3]), dtype=cache.dtype)
    return np.concatenate(blocks, axis=1)   # BUG: not cut at seq_len


_base.rewire(globals())
