"""PyTorch's FlexAttention, `torch.nn.attention.flex_attention.flex_attention`, run eagerly on the CPU.

Conversions (as its documentation shows them):

- q, k, v (..., L, d) become (N, 1, L, d): the leading dimensions, broadcast, flattened into N.
- The contract's mask (True = may attend) is a `mask_mod` reading it, made into a block mask with
  `create_block_mask`; `is_causal=True` is the documentation's causal `mask_mod`, `q_idx >= kv_idx`
  (top-left aligned when L_q != L_k), and both together are `and_masks` of the two.
- A float bias is a `score_mod` adding it to the score.
- `attention_weights`: the output for V = I (P @ I = P).
- Out of scope: gradients (FlexAttention has no backward on the CPU: it raises NotImplementedError
  for inputs that require grad).
"""

import torch
from torch.nn.attention.flex_attention import and_masks, create_block_mask, flex_attention

from spec_tests import OutOfScope

BACKEND = "torch"
DTYPES = ("float64", "float32")
CONTRACT = ("scaled_dot_product_attention", "attention_weights")


def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def _flex(q, k, v, mask, is_causal, scale, bias):
    if any(x.requires_grad for x in (q, k, v)):
        raise OutOfScope("FlexAttention has no backward pass on the CPU")
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    L_q, L_k = q.shape[-2], k.shape[-2]
    q, k, v = (x.expand(*lead, *x.shape[-2:]).reshape(-1, 1, *x.shape[-2:]) for x in (q, k, v))  # (N, 1, L, d)
    N = q.shape[0]
    mods = []
    if mask is not None:
        m = mask.expand(*lead, L_q, L_k).reshape(N, L_q, L_k)
        mods.append(lambda b, h, q_idx, kv_idx: m[b, q_idx, kv_idx])
    if is_causal:
        mods.append(_causal)
    block_mask = None
    if mods:
        block_mask = create_block_mask(and_masks(*mods) if len(mods) > 1 else mods[0], N, None, L_q, L_k,
                                       device="cpu")
    score_mod = None
    if bias is not None:
        bb = bias.to(q.dtype).expand(*lead, L_q, L_k).reshape(N, L_q, L_k)
        score_mod = lambda score, b, h, q_idx, kv_idx: score + bb[b, q_idx, kv_idx]  # noqa: E731
    out = flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask, scale=scale)  # (N, 1, L_q, d_v)
    return out.reshape(*lead, L_q, out.shape[-1])


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None):
    """flex_attention(q, k, v, score_mod, block_mask, scale): (..., L_q, d_v)."""
    return _flex(q, k, v, mask, is_causal, scale, bias)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None):
    """The output for V = I (L_k, L_k): the weights, (..., L_q, L_k)."""
    return _flex(q, k, torch.eye(k.shape[-2], dtype=q.dtype), mask, is_causal, scale, bias)
