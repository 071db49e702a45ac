"""x-transformers' `x_transformers.x_transformers.Attention` (the attention layer of its `Encoder`/`Decoder`), a module
with multi-head attention only, grouped K/V heads included (`kv_heads`), run in its default (not flash) path.

Conversions (as its README and signature ask of a user):

- The weights, given to the module with `torch.func.functional_call`: `to_q`, `to_k`, `to_v` and `to_out`
  are bias-free `nn.Linear`s, whose (out, in) weights are W_Q^T, W_K^T, W_V^T, W_O^T (with `kv_heads=G`,
  `to_k` and `to_v` are (G*d_k, D)). The module has no biases: biases are out of scope.
- Keys and values: `forward(x, context)` projects keys and values from one input, `context` (given
  always, self-attention included, so that query and key stay apart): a `key` that differs from `value`
  is out of scope, and so are gradients with respect to key and value as two inputs.
- The output projection: `project_out=True` (by default the module drops W_O when H = 1).
- The mask: `attn_mask` takes a boolean (L_q, L_k), (H, L_q, L_k) or (B, H, L_q, L_k) mask with True = may
  attend, the contract's polarity; the contract's mask is passed as it is.
- `is_causal` is the constructor's `causal`, the module's own causal mask (`triu(L_k - L_q + 1)`).
- `dim_head = D / H`, so its scale `dim_head ** -0.5` is the contract's.
"""

import torch
from x_transformers.x_transformers import Attention

from spec_tests import OutOfScope

BACKEND = "torch"
DTYPES = ("float64", "float32")
CONTRACT = ("multi_head_attention",)


def _module(weights, D, H, G, is_causal, dtype):
    mha = Attention(dim=D, dim_head=D // H, heads=H, kv_heads=G, causal=is_causal, project_out=True)
    params = {"to_q.weight": weights["w_q"].t(), "to_k.weight": weights["w_k"].t(),
              "to_v.weight": weights["w_v"].t(), "to_out.weight": weights["w_o"].t()}  # nn.Linear's (out, in)
    return mha.to(dtype), params


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None):
    """Attention(D, dim_head=D/H, heads=H, kv_heads=G, causal, project_out=True)(query, context=key, attn_mask=mask)."""
    if any(weights.get(n) is not None for n in ("b_q", "b_k", "b_v", "b_o")):
        raise OutOfScope("x-transformers' Attention has bias-free projections (LinearNoBias): no b_Q, b_K, b_V, b_O")
    if key.shape != value.shape or not torch.equal(key, value):
        raise OutOfScope("x-transformers' Attention projects keys and values from one input (context): "
                         "key and value must be the same array")
    if key is not value and (key.requires_grad or value.requires_grad):
        raise OutOfScope("x-transformers' Attention takes keys and values as one input (context): its gradients "
                         "with respect to key and to value cannot be told apart")
    D = query.shape[-1]
    G = num_heads if num_kv_heads is None else num_kv_heads
    mha, params = _module(weights, D, num_heads, G, is_causal, query.dtype)
    kwargs = {"context": key} if mask is None else {"context": key, "attn_mask": mask}
    return torch.func.functional_call(mha, params, (query,), kwargs, strict=True)
