"""A float16/bfloat16-only multi-head attention that scales each head's scores by 1/sqrt(D), not 1/sqrt(d_k).

Caught by MHA-5: the heads' scores are too small by sqrt(H), the softmax too flat, and the output
differs from the float64 reference by more than the low-precision allowance (a small multiple of the naive low-precision error plus a few
units in the last place of the output). Built on impls/torch_naive (correct), declaring only the
low precisions, as GPU kernels do.
"""
import math

from impls.torch_naive import *  # noqa: F401,F403
from impls.torch_naive import _attention_weights, _linear, _visible, check_multi_head

DTYPES = ("float16", "bfloat16")
BUG = "scaling each head's scores by 1/sqrt(d_model) instead of 1/sqrt(d_k), in float16 and bfloat16"
CAUGHT_BY = "MHA-5"
SAME_BUG_AS = "mha_scale_by_sqrt_d_model"  # the NumPy known bug, in float16 and bfloat16


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None):
    d_k, G = check_multi_head(query, key, value, weights, num_heads, mask, num_kv_heads)
    B, L_q, D = query.shape
    L_k = key.shape[1]
    Q = _linear(query, weights["w_q"], weights.get("b_q")).view(B, L_q, num_heads, d_k).transpose(1, 2)
    K = _linear(key, weights["w_k"], weights.get("b_k")).view(B, L_k, G, d_k).transpose(1, 2)
    V = _linear(value, weights["w_v"], weights.get("b_v")).view(B, L_k, G, d_k).transpose(1, 2)
    if G != num_heads:
        K, V = K.repeat_interleave(num_heads // G, dim=1), V.repeat_interleave(num_heads // G, dim=1)
    p = _attention_weights(Q, K, _visible(mask, is_causal, L_q, L_k, query.device), 1.0 / math.sqrt(D))  # BUG
    out = (p @ V).transpose(1, 2).contiguous().view(B, L_q, D)
    return _linear(out, weights["w_o"], weights.get("b_o"))
