"""Masking adds -1e9 to the hidden scores, lecture note 2 §3.2's fill, and runs in float16.

Caught by MASK-6: float16's largest finite value is 65504, so -1e9 rounds to -inf. A query
whose keys are all hidden then has a row of -inf scores, and softmax gives NaN (in float32
the same fill gives the mean of V instead, MASK-4's bug). Lecture note 2 §4.2 is mixed precision.
Built on impls/torch_naive (correct), not on the NumPy `_base`: the bug needs float16.
"""
import math

import torch
import torch.nn.functional as F

from impls.torch_naive import *  # noqa: F401,F403
from impls.torch_naive import _visible, check_attention

DTYPES = ("float16",)
BUG = ("masking by adding -1e9 to hidden scores in float16, where -1e9 is -inf, so a query with "
       "no visible key gets a row of -inf and a NaN output")
CAUGHT_BY = "MASK-6"


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    *_, L_q, L_k = check_attention(q, k, v, mask=mask)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale  # (..., L_q, L_k), float16
    allowed = _visible(mask, is_causal, L_q, L_k, q.device)
    if allowed is not None:
        scores = scores + (~allowed).to(scores.dtype) * -1e9  # BUG: -1e9 overflows to -inf in float16
    p = F.softmax(scores.float(), dim=-1).to(q.dtype)  # the softmax itself in float32, as it should be
    return torch.matmul(p, v)
