"""In float16 and bfloat16, the softmax's denominator is summed in the input's precision, one key at a time.

exp(s - max) is right, and so is every term; but a running sum kept in float16 stops growing once it is
large against its terms (float16's ulp at 512 is 0.5), and bfloat16's much sooner. On rows of a few dozen
keys the error hides inside the rule; at 1024 and 4096 keys the weights no longer sum to 1 and every output
is off by a few percent. Caught by PREC-1, which draws rows of 1024 and 4096 keys in low precision.
Built on impls/torch_naive (correct), whose softmax sums in float32.
"""
import math

import torch

from impls.torch_naive import *  # noqa: F401,F403
from impls.torch_naive import _visible, check_attention

DTYPES = ("float16", "bfloat16")
BUG = "the softmax's denominator accumulated key by key in float16/bfloat16 instead of float32"
CAUGHT_BY = "PREC-1"


def _weights(q, k, mask, is_causal, scale):
    *_, L_q, L_k = check_attention(q, k, mask=mask)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    s = torch.matmul(q, k.transpose(-2, -1)) * scale  # (..., L_q, L_k)
    allowed = _visible(mask, is_causal, L_q, L_k, q.device)
    if allowed is not None:
        s = s.masked_fill(~allowed, float("-inf"))
    m = s.max(dim=-1, keepdim=True).values
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(s - m)  # (..., L_q, L_k), each term right
    total = torch.zeros_like(m)
    for j in range(L_k):  # BUG: the running sum is stored in the input's dtype after every key
        total = total + e[..., j:j + 1]
    return torch.where(total > 0, e / torch.where(total > 0, total, torch.ones_like(total)), torch.zeros_like(e))


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None):
    if bias is not None:
        raise NotImplementedError("bias")
    return _weights(q, k, mask, is_causal, scale)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None):
    if bias is not None:
        raise NotImplementedError("bias")
    check_attention(q, k, v, mask=mask)
    return torch.matmul(_weights(q, k, mask, is_causal, scale), v)
