"""multi_head_attention takes the later chapters' keywords but never hands them to the heads.

Caught by MHA-10: window_size, segment ids, softcap and sinks must reach every head's attention;
accepted and dropped, the window and the documents hide nothing, the cap caps nothing and the
sinks take no weight, so the output is plain multi-head attention.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("multi_head_attention accepting window_size, segment ids, softcap and sinks but calling each head's "
       "attention without them")
CAUGHT_BY = "MHA-10"


def _head_keywords(window_size, q_segment_ids, kv_segment_ids, softcap, sinks):
    return {}   # BUG: the keywords given are dropped


_base.rewire(globals())
