"""A paged cache's block table is read from its last used entry to its first: the sequence's blocks come out reversed.

Caught by EFF-6: token t of sequence b lives in block block_table[b, t // S]; reading the table's
entries backwards puts the newest block first, so the keys no longer line up with their positions.
Without a causal mask attention is blind to the keys' order, but with one (a prefill) each query sees
the wrong tokens, and a decode step no longer matches its row of the prefill.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("reading a paged cache's block table backwards (the last used block first), so the sequence's "
       "tokens come out of order")
CAUGHT_BY = "EFF-6"
ALSO_CAUGHT_BY = ("EFF-7",)


def _blocks_of(table_row, seq_len, block_size):
    used = -(-seq_len // block_size)
    return [int(table_row[n]) for n in reversed(range(used))]   # BUG: the table is read in token order


_base.rewire(globals())
