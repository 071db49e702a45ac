"""A float16/bfloat16-only multi-head attention (as a GPU kernel declares) that returns all zeros.

Caught by MHA-5: the output must equal the float64 reference within FACTOR times the naive
low-precision error plus a few units in the last place of the output's own magnitude; an
all-zero output is off by the whole output. (Under a floor sized by a worst case of the inputs,
bfloat16's allowance exceeded the output in most random cases, and zeros passed.)
Built on impls/torch_naive (correct), declaring only the low precisions.
"""
import torch

from impls.torch_naive import *  # noqa: F401,F403
from impls.torch_naive import check_multi_head

DTYPES = ("float16", "bfloat16")
BUG = "returning an all-zero (B, L_q, D) tensor from multi_head_attention, in float16 and bfloat16"
CAUGHT_BY = "MHA-5"


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None):
    check_multi_head(query, key, value, weights, num_heads, mask, num_kv_heads)
    return torch.zeros_like(query)  # BUG: (B, L_q, D) of zeros
