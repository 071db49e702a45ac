"""PyTorch's fused attention on a CUDA GPU, with the FlashAttention backend forced where it applies; follows CONTRACT.md.

Claim EFF-3 is about flash kernels, and `F.scaled_dot_product_attention` chooses its backend
itself (flash, memory-efficient, cuDNN or math). Here the flash backend is forced, with
`torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION)`, whenever the inputs are what it
takes: float16/bfloat16, no mask (flash kernels take none, only causal), one head dim for q,
k and v, a multiple of 8 and at most 256. Everything else (a mask, head dims 59 or 300, ...)
goes to impls/torch_sdpa, which lets PyTorch choose.

Causal alignment: the contract's is bottom-right (CONTRACT.md), PyTorch's `is_causal` is
top-left. They agree when L_q == L_k; otherwise the mask is
`torch.nn.attention.bias.causal_lower_right(L_q, L_k)`, which PyTorch dispatches to the flash
kernel's own bottom-right causal mode. Queries that see no key (causal with L_q > L_k) are
set to exactly 0 here, whatever the kernel leaves there.

On a machine without a GPU the suite reports this implementation as unavailable (DEVICE).
"""

import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

from impls import torch_sdpa
from impls._heads import multi_head
from impls.torch_sdpa import attention_weights, layer_norm, merge_heads, sinusoidal_positional_encoding, split_heads
from reference.checks import check_attention, check_multi_head

BACKEND = "torch"
DEVICE = "cuda"
DTYPES = ("float16", "bfloat16")
# The part of the contract this module adds (the others are torch_sdpa's): the claims of other functions are "not applicable".
CONTRACT = ("scaled_dot_product_attention", "multi_head_attention")
FLASH_KERNEL = True  # a tiled kernel that never forms the L_q x L_k scores: EFF-3 applies

__all__ = ["BACKEND", "DEVICE", "DTYPES", "attention_weights", "flash_applies", "with_fallback", "layer_norm", "merge_heads",
           "multi_head_attention", "scaled_dot_product_attention", "sinusoidal_positional_encoding", "split_heads"]


def flash_applies(q, k, v, mask) -> bool:
    """Can the flash backend take these inputs? (dtype, device, no mask, one head dim: a multiple of 8, <= 256)."""
    d = q.shape[-1]
    return (mask is None and q.is_cuda and q.dtype in (torch.float16, torch.bfloat16)
            and k.shape[-1] == d and v.shape[-1] == d and d % 8 == 0 and d <= 256)


def _flash(q, k, v, is_causal, scale):
    """The flash kernel on q (*lead, L_q, d), k, v (*lead, L_k, d); no input checks."""
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    L_q, L_k, d = q.shape[-2], k.shape[-2], q.shape[-1]

    def four_d(x):  # the flash kernel wants (batch, heads, L, d): all leading dims become the batch
        return x.expand(*lead, *x.shape[-2:]).reshape(-1, 1, *x.shape[-2:])  # (N, 1, L, d)

    q4, k4, v4 = four_d(q), four_d(k), four_d(v)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        if is_causal and L_q != L_k:  # bottom-right aligned: PyTorch's is_causal would be top-left
            out = F.scaled_dot_product_attention(q4, k4, v4, attn_mask=causal_lower_right(L_q, L_k), scale=scale)
        else:
            out = F.scaled_dot_product_attention(q4, k4, v4, is_causal=is_causal, scale=scale)
    out = out.reshape(*lead, L_q, d)  # (*lead, L_q, d)
    if is_causal and L_q > L_k:  # the first L_q - L_k queries see no key: exactly 0 (out is our own tensor)
        out[..., : L_q - L_k, :] = 0.0
    return out


def with_fallback(applies, flash):
    """The contract's scaled_dot_product_attention and multi_head_attention around a flash kernel:
    inputs that `applies(q, k, v, mask)` accepts go to `flash(q, k, v, is_causal, scale)`, the
    rest to impls/torch_sdpa (PyTorch chooses the backend)."""

    def attend(q, k, v, mask, is_causal, scale):
        if applies(q, k, v, mask):
            return flash(q, k, v, is_causal, scale)
        q, k, v = torch_sdpa._broadcast_leading(q, k, v)
        return torch_sdpa._attend(q, k, v, mask, is_causal, scale)

    def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
        """softmax(Q K^T * scale) V; q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v) -> (..., L_q, d_v)."""
        check_attention(q, k, v, mask=mask)
        return attend(q, k, v, mask, is_causal, 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale))

    def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
        """Concat(head_1..head_H) W^O + b_O, heads by the flash kernel; query (B, L_q, D), key/value (B, L_k, D)."""
        d_k, _ = check_multi_head(query, key, value, weights, num_heads, mask)
        scale = 1.0 / math.sqrt(d_k)
        return multi_head(query, key, value, weights, num_heads, lambda q, k, v: attend(q, k, v, mask, is_causal, scale),
                          torch_sdpa._linear, split_heads, merge_heads)

    return scaled_dot_product_attention, multi_head_attention


scaled_dot_product_attention, multi_head_attention = with_fallback(flash_applies, _flash)
