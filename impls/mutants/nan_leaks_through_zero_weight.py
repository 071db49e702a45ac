"""P V with the values of hidden keys left in: a NaN or inf there comes back through a weight of exactly 0.

Caught by MASK-8: what sits at a hidden position never reaches an output. The weights are right
(exactly 0 on every hidden key), but P V sums P_ij V_j over all keys, and 0 · NaN = 0 · inf = NaN,
so a NaN in the value of a padding key turns every output of its slice into NaN. Zeroing the values
of keys that no query weighs before the product (or using `where` instead of a product) is the fix.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("computing P V with the values of keys no query sees still in it: their weights are exactly 0, but "
       "0 * NaN = NaN, so a NaN or inf in a padding key's value reaches every output of its slice")
CAUGHT_BY = "MASK-8"


def _weighted_values(p, v):
    return p @ v   # BUG: 0 * NaN is NaN; the values of keys no query weighs are not removed first


_base.rewire(globals())
