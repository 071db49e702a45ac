"""PyTorch attention with Hugging Face's eager softmax: `F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)`.

Written for float16 and bfloat16 (where a float32 softmax is right), it runs on float64 input too, and
there it lowers the weights to float32: a float64 call is right to about 7 digits. Caught by PREC-3; every
other claim judges it at float32 precision. Built on impls/torch_naive (correct) for everything else.
"""
import types

import torch
import torch.nn.functional as F

import impls.torch_naive as _naive
from impls.torch_naive import *  # noqa: F401,F403

BUG = "the softmax always computed in float32 (dtype=torch.float32) and cast back, float64 input included"
CAUGHT_BY = "PREC-3"


def _attention_weights(q, k, allowed, scale, bias=None, softcap=None, sinks=None):
    if softcap is not None or sinks is not None:
        raise NotImplementedError("softcap and sinks")
    scores = torch.matmul(q, k.transpose(-2, -1)) * scale  # (..., L_q, L_k)
    if bias is not None:
        scores = scores + bias
    empty = None
    if allowed is not None or bias is not None:
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        empty = torch.isneginf(scores).all(dim=-1, keepdim=True)  # (..., L_q, 1)
        scores = scores.masked_fill(empty, 0.0)
    p = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)  # BUG: float32 even for float64 input
    return p if empty is None else p.masked_fill(empty, 0.0)


def _rebound(fn):
    """torch_naive's function `fn`, looking its helpers up in a namespace where _attention_weights is this one."""
    namespace = {**vars(_naive), "_attention_weights": _attention_weights}
    return types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)


attention_weights = _rebound(_naive.attention_weights)
scaled_dot_product_attention = _rebound(_naive.scaled_dot_product_attention)
multi_head_attention = _rebound(_naive.multi_head_attention)
