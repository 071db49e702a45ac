"""In float16, the softmax is exp(s) / sum(exp(s)), without subtracting the row's maximum.

Caught by PREC-1: float16's largest value is 65504 = exp(11.09), so any score above 11
overflows to inf and the row becomes inf / inf = NaN. In float32 (largest exp(88.7)) the
same code passes ordinary inputs, which is why the bug survives until mixed precision.
Built on impls/torch_naive (correct), not on the NumPy `_base`: the bug needs float16.
"""
import math

import torch

from impls.torch_naive import *  # noqa: F401,F403
from impls.torch_naive import check_attention, _visible

DTYPES = ("float16",)
BUG = ("computing softmax as exp(s) / sum(exp(s)) in float16 without subtracting the row maximum, "
       "so scores above ~11 overflow to inf and the output is NaN")
CAUGHT_BY = "PREC-1"


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    *_, L_q, L_k = check_attention(q, k, v, mask=mask)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    s = torch.matmul(q, k.transpose(-2, -1)) * scale  # (..., L_q, L_k) in float16
    e = torch.exp(s)  # BUG: no s - max(s); exp(12) = 162755 > 65504 is inf in float16
    allowed = _visible(mask, is_causal, L_q, L_k, q.device)
    if allowed is not None:
        e = e.masked_fill(~allowed, 0.0)
    z = e.sum(dim=-1, keepdim=True)
    p = torch.where(z > 0, e / torch.where(z > 0, z, 1.0), 0.0)
    return torch.matmul(p.to(v.dtype), v)
