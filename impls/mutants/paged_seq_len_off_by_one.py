"""A paged cache is read with one token too few: seq_lens taken as the index of the newest token.

Caught by EFF-6: seq_lens[b] counts the tokens cached for sequence b (the newest one included);
reading seq_lens[b] - 1 of them leaves the newest key and value out, which a decode step needs most.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("reading seq_lens[b] - 1 tokens of a paged cache (seq_lens taken as the newest token's index), "
       "so the newest key and value are left out")
CAUGHT_BY = "EFF-6"


def _cached_length(seq_len):
    return max(seq_len - 1, 0)   # BUG: seq_len already counts the newest token


_base.rewire(globals())
