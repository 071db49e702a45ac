"""Attention's backward pass through the softmax as if it were elementwise: dS = P * dP.

Caught by GRAD-2: each weight depends on every score of its row (they sum to 1), so the
softmax's Jacobian subtracts the row's weighted mean, dS = P * (dP - sum_j P dP).
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "scaled_dot_product_attention_backward using dS = P * dP, without the softmax's row correction"
CAUGHT_BY = "GRAD-2"


def _softmax_backward(p, dp):
    return p * dp   # BUG: the row sum term is missing


_base.rewire(globals())
