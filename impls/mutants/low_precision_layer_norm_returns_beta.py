"""A float16/bfloat16-only LayerNorm that returns beta (broadcast to x's shape) and nothing else.

Caught by LN-1: the normalised term gamma (x - mean) / sqrt(var + eps) is missing; its size is
|gamma| times a few, far outside the low-precision allowance (a small multiple of the naive error) plus a few units in the
last place of the output. Built on impls/torch_naive, declaring only the low precisions.
"""
from impls.torch_naive import *  # noqa: F401,F403
from impls.torch_naive import check_layer_norm

DTYPES = ("float16", "bfloat16")
BUG = "returning beta (broadcast to x's shape) from layer_norm, in float16 and bfloat16"
CAUGHT_BY = "LN-1"


def layer_norm(x, gamma, beta, eps=1e-5):
    check_layer_norm(x, gamma, beta)
    return beta.expand(x.shape).clone()  # BUG: the normalised term is missing
