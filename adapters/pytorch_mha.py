"""PyTorch's `torch.nn.MultiheadAttention` (batch_first=True, need_weights=False), a module with
multi-head attention only.

Conversions (as PyTorch's documentation asks of a user):

- The weights, given to the module with `torch.func.functional_call`: `in_proj_weight` is [W_Q^T; W_K^T; W_V^T] ((3D, D): nn.Linear's (out, in) orientation)
  and `out_proj.weight` is W_O^T; the biases are `in_proj_bias` = [b_Q; b_K; b_V] and `out_proj.bias`
  (a missing one is 0; no bias at all is `bias=False`).
- The mask: PyTorch's boolean `attn_mask` means True = *not* allowed, the contract's opposite, so it
  gets `~mask`, broadcast to (B, H, L_q, L_k) and laid out as (B*H, L_q, L_k).
- `is_causal=True` is PyTorch's hint that `attn_mask` *is* the causal mask; without a mask the
  causal mask is `nn.Transformer.generate_square_subsequent_mask(L)`, which is square.
- Out of scope: causal attention with L_q != L_k (the library's causal mask is square); a mask
  together with `is_causal` (the flag is a hint that the mask *is* the causal mask: given both, PyTorch
  2.13 drops the mask and runs causal alone); grouped K/V heads (the module has none: `num_kv_heads`
  is not taken).

Speed: each call runs on one intra-op thread (adapters/support/threads.py: on a shared machine PyTorch's
thread pool makes a call on the spec's small inputs many times slower), which changes no result.
"""

import torch
from torch import nn

from adapters.support.threads import one_thread
from spec_tests import OutOfScope

BACKEND = "torch"
DTYPES = ("float64", "float32")
CONTRACT = ("multi_head_attention",)


def _module(weights, num_heads, D, dtype):
    """The module, and its parameters made of the contract's weights (torch.func.functional_call runs the
    module on them, so gradients reach the weights the caller passed)."""
    names = ("b_q", "b_k", "b_v", "b_o")
    bias = any(weights.get(n) is not None for n in names)
    mha = nn.MultiheadAttention(D, num_heads, bias=bias, batch_first=True, dtype=dtype, device="meta")
    params = {"in_proj_weight": torch.cat([weights["w_q"].t(), weights["w_k"].t(), weights["w_v"].t()]),
              "out_proj.weight": weights["w_o"].t()}
    if bias:
        zero = torch.zeros(D, dtype=dtype)
        b = [weights.get(n) if weights.get(n) is not None else zero for n in names]
        params["in_proj_bias"], params["out_proj.bias"] = torch.cat(b[:3]), b[3]
    return mha, params


@one_thread()
def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
    """nn.MultiheadAttention(D, H, batch_first=True)(query, key, value, attn_mask, is_causal)[0]."""
    B, L_q, D = query.shape
    L_k = key.shape[1]
    mha, params = _module(weights, num_heads, D, query.dtype)
    attn_mask = None
    if mask is not None and is_causal:
        raise OutOfScope("nn.MultiheadAttention's is_causal is a hint that attn_mask is the causal mask "
                         "(its documentation); a mask with causal must be one combined mask")
    if mask is not None:
        H = num_heads
        if mask.dtype == torch.bool:  # True = not allowed: the contract's opposite
            mask = ~mask
        attn_mask = mask.expand(B, H, L_q, L_k).reshape(B * H, L_q, L_k)  # a float mask is added, as PyTorch does
    elif is_causal:
        if L_q != L_k:
            raise OutOfScope("nn.MultiheadAttention's causal mask (generate_square_subsequent_mask) is square: "
                             "L_q must equal L_k")
        attn_mask = nn.Transformer.generate_square_subsequent_mask(L_q, dtype=query.dtype)
    out, _ = torch.func.functional_call(mha, params, (query, key, value),
                                        dict(attn_mask=attn_mask, is_causal=is_causal, need_weights=False))
    return out
