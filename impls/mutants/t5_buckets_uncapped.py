"""T5 buckets without the cap: distances beyond max_distance get buckets past the last one.

Caught by PE-5: every distance at or beyond max_distance must share the last bucket
(num_buckets - 1 per direction); uncapped, long distances index past the table.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "T5 relative-position buckets not capped at the last bucket beyond max_distance"
CAUGHT_BY = "PE-5"


def _log_bucket(r, exact, num_buckets, max_distance):
    scaled = np.log(np.maximum(r, exact) / exact) / np.log(max_distance / exact) * (num_buckets - exact)
    return exact + scaled.astype(np.int64)   # BUG: no minimum with num_buckets - 1


_base.rewire(globals())
