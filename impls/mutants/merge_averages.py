"""Two partial attention results are merged by their plain average instead of weighting each by its log-sum-exp.

Caught by LSE-2: attention over K_1 ∪ K_2 is exp(lse_1 - lse) out_1 + exp(lse_2 - lse) out_2, each
half weighted by its share of the softmax's denominator; (out_1 + out_2) / 2 is right only when the
two halves happen to have equal denominators.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("merging two partial attention results by their average, (out1 + out2) / 2, instead of weighting "
       "each by exp(lse_k - lse) with lse = log(exp(lse1) + exp(lse2))")
CAUGHT_BY = "LSE-2"


def merge_attention(out1, lse1, out2, lse2):
    out1, lse1, out2, lse2 = (np.asarray(x) for x in (out1, lse1, out2, lse2))
    lse = np.logaddexp(lse1, lse2)
    return (out1 + out2) / 2, lse   # BUG: each half should be weighted by exp(lse_k - lse)


_base.rewire(globals())
