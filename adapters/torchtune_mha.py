"""torchtune's `torchtune.modules.MultiHeadAttention` (the attention layer of its LLaMA-family models), a module with
multi-head attention only, grouped K/V heads included (`num_kv_heads`).

Conversions (as torchtune's documentation asks of a user):

- The weights, given to the module with `torch.func.functional_call`: `q_proj`, `k_proj`, `v_proj` and
  `output_proj` are `nn.Linear`s, whose (out, in) weights are W_Q^T, W_K^T, W_V^T, W_O^T; with grouped
  heads `k_proj` and `v_proj` are (G*d_k, D). Biases go to the Linears' `bias` (a missing one is 0; none
  at all is `bias=False`).
- Keys and values: the module's `forward(x, y)` projects keys and values from one input, `y`: a `key`
  that differs from `value` is out of scope (self-attention passes one array three times), and so are
  gradients with respect to key and value as two inputs.
- The mask: torchtune's boolean mask is (B, L_q, L_k) with True = may attend, the contract's polarity;
  the contract's (B, 1, L_q, L_k) or (L_q, L_k) is broadcast to it. A mask per head has no place there:
  out of scope.
- `is_causal` is the module's constructor flag. torchtune applies it only when no mask is given ("if no
  mask is specified, a causal mask is used by default"), as `F.scaled_dot_product_attention(is_causal=True)`:
  left as it is.
"""

import torch
from torch import nn
from torchtune.modules import MultiHeadAttention

from spec_tests import OutOfScope

BACKEND = "torch"
DTYPES = ("float64", "float32")
CONTRACT = ("multi_head_attention",)


def _module(weights, D, H, G, is_causal, dtype):
    """The module, and its parameters made of the contract's weights."""
    d_k = D // H
    bias = any(weights.get(n) is not None for n in ("b_q", "b_k", "b_v", "b_o"))
    linear = lambda n_out: nn.Linear(D, n_out, bias=bias, dtype=dtype, device="meta")  # noqa: E731
    mha = MultiHeadAttention(embed_dim=D, num_heads=H, num_kv_heads=G, head_dim=d_k, q_proj=linear(H * d_k),
                             k_proj=linear(G * d_k), v_proj=linear(G * d_k), output_proj=linear(D),
                             is_causal=is_causal)
    params = {}
    for name, proj in (("q", "q_proj"), ("k", "k_proj"), ("v", "v_proj"), ("o", "output_proj")):
        w = weights[f"w_{name}"]
        params[f"{proj}.weight"] = w.t()  # nn.Linear's (out, in)
        if bias:
            b = weights.get(f"b_{name}")
            params[f"{proj}.bias"] = b if b is not None else torch.zeros(w.shape[1], dtype=dtype)
    return mha, params


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None):
    """MultiHeadAttention(D, H, G, d_k, ..., is_causal)(query, key, mask=mask), key and value the same input."""
    B, L_q, D = query.shape
    L_k = key.shape[1]
    if key.shape != value.shape or not torch.equal(key, value):
        raise OutOfScope("torchtune's MultiHeadAttention projects keys and values from one input (forward(x, y)): "
                         "key and value must be the same array")
    if key is not value and (key.requires_grad or value.requires_grad):
        raise OutOfScope("torchtune's MultiHeadAttention takes keys and values as one input (y): its gradients "
                         "with respect to key and to value cannot be told apart")
    if mask is not None:
        mask = mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))  # as it broadcasts to (B, H, L_q, L_k)
        if mask.shape[1] != 1:
            raise OutOfScope("torchtune's mask is (B, L_q, L_k), one for every head: a mask per head has no place")
    G = num_heads if num_kv_heads is None else num_kv_heads
    mha, params = _module(weights, D, num_heads, G, is_causal, query.dtype)
    kwargs = {}
    if mask is not None:
        kwargs["mask"] = mask[:, 0].expand(B, L_q, L_k)
    return torch.func.functional_call(mha, params, (query, key), kwargs, strict=True)
