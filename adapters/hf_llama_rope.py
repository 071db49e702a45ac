"""Hugging Face transformers' LLaMA rotary embedding, `transformers.models.llama.modeling_llama.LlamaRotaryEmbedding`
(cos and sin for the positions) with `apply_rotary_pos_emb` (x cos + rotate_half(x) sin).

    rope(x, m)[2i]   = x[2i] cos(m θ_i) - x[2i+1] sin(m θ_i)        the contract: interleaved pairs
    rope(x, m)[2i+1] = x[2i] sin(m θ_i) + x[2i+1] cos(m θ_i)        θ_i = base^(-2i/d)
    HF: feature i pairs with feature i + d/2 (GPT-NeoX's "half-split" layout, `rotate_half`)

Conversions:

- Layout. The two layouts are the same rotation with the features permuted (reference/rotary.py): with
  P = [0, d/2, 1, d/2 + 1, ...], rope(y) = hf(y[..., argsort(P)])[..., P]. So the contract's pairs
  (2i, 2i+1) are moved to HF's places (i, i + d/2), rotated by HF, and moved back: a permutation of
  the features, the one a checkpoint's W^Q and W^K columns get when converted between the layouts.
- `base` is the config's `rope_theta` (`rope_parameters={"rope_type": "default", ...}`), `head_dim` is d.
- x (..., L, d) is HF's (batch, heads, L, d) with the leading dimensions as the batch and one head;
  `positions` (..., L) are its `position_ids` (batch, L).
- HF computes the angles m θ_i in float32 (its forward casts the positions and frequencies to float)
  and casts cos and sin to x's dtype: left as it is (the contract allows float32 angles).
"""

import math

import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

BACKEND = "torch"
DTYPES = ("float64", "float32")
CONTRACT = ("rotary_embedding",)


def _to_half_split(d: int) -> torch.Tensor:
    """argsort(P): index array taking the contract's interleaved features to HF's half-split places."""
    P = torch.stack([torch.arange(d // 2), torch.arange(d // 2) + d // 2], dim=-1).reshape(d)
    return torch.argsort(P), P


def rotary_embedding(x, positions, base=10000.0):
    """apply_rotary_pos_emb(x', x', *LlamaRotaryEmbedding(config)(x', position_ids))[0], x' = x in HF's layout."""
    positions = torch.as_tensor(positions)
    L, d = x.shape[-2], x.shape[-1]
    lead = torch.broadcast_shapes(x.shape[:-2], positions.shape[:-1])
    config = LlamaConfig(hidden_size=d, num_attention_heads=1, head_dim=d,
                         rope_parameters={"rope_type": "default", "rope_theta": float(base)})
    rotary = LlamaRotaryEmbedding(config)
    to_hf, back = _to_half_split(d)
    N = math.prod(lead)
    x4 = x.expand(*lead, L, d).reshape(N, 1, L, d)[..., to_hf]  # (N, 1, L, d), half-split layout
    position_ids = positions.expand(*lead, L).reshape(N, L)  # (N, L)
    cos, sin = rotary(x4, position_ids)  # (N, L, d) each, in x's dtype
    out, _ = apply_rotary_pos_emb(x4, x4, cos, sin, unsqueeze_dim=1)
    return out[..., back].reshape(*lead, L, d)
