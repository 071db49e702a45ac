"""The `flash-attn` package's kernel (FlashAttention-2, Dao 2023) on a CUDA GPU; follows CONTRACT.md.

Lecture note 2 §4.1 calls `flash_attention(q, k, v)` from `flash_attn`; its current entry point is
`flash_attn_func(q, k, v, dropout_p, softmax_scale, causal)` on (batch, seqlen, heads, head_dim)
tensors in float16/bfloat16. Since flash-attn 2.1 its causal mask is bottom-right aligned,
the contract's. It takes no arbitrary mask and needs one head dim for q, k and v (<= 256):
other inputs go to impls/torch_sdpa (PyTorch chooses the backend), so the claims still hold.
Queries that see no key (causal with L_q > L_k) are set to exactly 0 here.

Without the package (`pip install flash-attn`, which needs a CUDA toolchain) or without a GPU,
the suite reports this implementation as unavailable, with the reason.
"""

import flash_attn
import torch
from flash_attn import flash_attn_func

from impls.torch_sdpa import attention_weights, layer_norm, merge_heads, sinusoidal_positional_encoding, split_heads
from impls.torch_sdpa_cuda import with_fallback

BACKEND = "torch"
DEVICE = "cuda"
DTYPES = ("float16", "bfloat16")
# The part of the contract this module adds (the others are torch_sdpa's): the claims of other functions are "not applicable".
CONTRACT = ("scaled_dot_product_attention", "multi_head_attention")
FLASH_KERNEL = True  # a tiled kernel that never forms the L_q x L_k scores: EFF-3 applies
_VERSION = tuple(int(p) for p in flash_attn.__version__.split(".")[:2] if p.isdigit())
if _VERSION < (2, 1):
    UNAVAILABLE = f"flash-attn {flash_attn.__version__} aligns causal masks top-left; 2.1 or later is needed"

__all__ = ["BACKEND", "DEVICE", "DTYPES", "attention_weights", "layer_norm", "merge_heads", "multi_head_attention",
           "scaled_dot_product_attention", "sinusoidal_positional_encoding", "split_heads"]


def _applies(q, k, v, mask) -> bool:
    d = q.shape[-1]
    return (mask is None and q.is_cuda and q.dtype in (torch.float16, torch.bfloat16)
            and k.shape[-1] == d and v.shape[-1] == d and d <= 256)


def _flash(q, k, v, is_causal, scale):
    """flash_attn_func on q (*lead, L_q, d), k, v (*lead, L_k, d); no input checks."""
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    L_q, d = q.shape[-2], q.shape[-1]

    def bshd(x):  # (*lead, L, d) -> (N, L, 1, d): flash-attn's (batch, seqlen, heads, head_dim)
        return x.expand(*lead, *x.shape[-2:]).reshape(-1, x.shape[-2], 1, d).contiguous()

    out = flash_attn_func(bshd(q), bshd(k), bshd(v), dropout_p=0.0, softmax_scale=scale, causal=is_causal)
    out = out[:, :, 0, :].reshape(*lead, L_q, d)  # (*lead, L_q, d)
    L_k = k.shape[-2]
    if is_causal and L_q > L_k:  # the first L_q - L_k queries see no key: exactly 0
        out = out.clone()
        out[..., : L_q - L_k, :] = 0.0
    return out


scaled_dot_product_attention, multi_head_attention = with_fallback(_applies, _flash)
