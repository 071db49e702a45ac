"""A float16/bfloat16-only LayerNorm whose eps is 5000 times the one asked for.

Caught by LN-1: with eps = 5e-2 in place of 1e-5, a row of spread 0.1 (variance 1e-2) is
divided by sqrt(0.06) instead of sqrt(0.01): every value shrinks by more than half, far outside
the low-precision allowance (a small multiple of the naive low-precision error plus a few units in the last place of the output).
Built on impls/torch_naive (correct), declaring only the low precisions, as GPU kernels do.
"""
from impls import torch_naive

from impls.torch_naive import *  # noqa: F401,F403

DTYPES = ("float16", "bfloat16")
BUG = "adding 5000 x eps to the variance in LayerNorm (e.g. a unit mix-up), in float16 and bfloat16"
CAUGHT_BY = "LN-1"


def layer_norm(x, gamma, beta, eps=1e-5):
    return torch_naive.layer_norm(x, gamma, beta, eps=5000.0 * eps)  # BUG
