"""PyTorch's `torch.nn.functional.scaled_dot_product_attention`, the default backend choice.

Conversions (the ones PyTorch's documentation asks of a user), nothing else:

- q, k, v (..., L, d) go in as they are; leading dimensions are expanded to a common shape first
  (the kernels other than the math one do not broadcast them).
- The contract's boolean mask (True = may attend) is PyTorch's boolean `attn_mask`, same polarity.
  A float bias is PyTorch's float `attn_mask`, added to the scores; a bias with a mask is the bias
  with hidden keys set to -inf (the documented recipe).
- `is_causal` is passed as PyTorch's flag, which is top-left aligned (j <= i) when L_q != L_k.
- Out of scope: a mask or a bias together with `is_causal=True` (PyTorch documents that it raises
  for both; a user passes one mask that holds both).
- `attention_weights`: the kernel returns no weights; P is its output for V = I (P @ I = P).
- `multi_head_attention`: the projections are `F.linear` with W^T (PyTorch stores (out, in)), heads
  are `view` + `transpose`, and grouped-query attention is the kernel's `enable_gqa=True`.

Speed: each call runs on one intra-op thread (adapters/support/threads.py: on a shared machine PyTorch's
thread pool makes a call on the spec's small inputs many times slower), which changes no result.
"""

import contextlib

import torch
import torch.nn.functional as F

from adapters.support.threads import one_thread
from spec_tests import OutOfScope

BACKEND = "torch"
DTYPES = ("float64", "float32")
CONTRACT = ("scaled_dot_product_attention", "attention_weights", "multi_head_attention")

BACKENDS = None  # None: PyTorch chooses; a list of torch.nn.attention.SDPBackend: only those (torch_sdpa_math)


def _kernel():
    if BACKENDS is None:
        return contextlib.nullcontext()
    from torch.nn.attention import sdpa_kernel

    return sdpa_kernel(BACKENDS)


def _attn_mask(mask, bias, dtype):
    """The contract's mask and bias as PyTorch's one attn_mask (bool: True = attend; float: added)."""
    if bias is None:
        return mask
    bias = bias.to(dtype)
    return bias if mask is None else bias.masked_fill(~mask, float("-inf"))


@one_thread()
def _call(q, k, v, mask, is_causal, scale, bias, enable_gqa=False):
    if is_causal and (mask is not None or bias is not None):
        raise OutOfScope("PyTorch's SDPA takes attn_mask or is_causal=True, not both (its documentation: "
                         "an error is raised if both are set)")
    if not enable_gqa:  # (with enable_gqa, k and v keep their fewer heads)
        lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        q, k, v = (x.expand(*lead, *x.shape[-2:]) for x in (q, k, v))
    attn_mask = _attn_mask(mask, bias, q.dtype)
    with _kernel():
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale,
                                              enable_gqa=enable_gqa)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None):
    """F.scaled_dot_product_attention(q, k, v, attn_mask, is_causal, scale): (..., L_q, d_v)."""
    return _call(q, k, v, mask, is_causal, scale, bias)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None):
    """The kernel's output for V = I (L_k, L_k): the weights P, (..., L_q, L_k)."""
    eye = torch.eye(k.shape[-2], dtype=q.dtype)
    return _call(q, k, eye, mask, is_causal, scale, bias)


def _project(x, w, b, heads):
    B, L, _ = x.shape
    return F.linear(x, w.t(), b).view(B, L, heads, -1).transpose(1, 2)  # (B, heads, L, d_k)


@one_thread()
def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None):
    """F.linear projections, the kernel per head (enable_gqa for G < H K/V heads), F.linear output."""
    G = num_heads if num_kv_heads is None else num_kv_heads
    q = _project(query, weights["w_q"], weights.get("b_q"), num_heads)
    k = _project(key, weights["w_k"], weights.get("b_k"), G)
    v = _project(value, weights["w_v"], weights.get("b_v"), G)
    heads = _call(q, k, v, mask, is_causal, None, None, enable_gqa=G != num_heads)  # (B, H, L_q, d_k)
    B, _, L_q, _ = heads.shape
    return F.linear(heads.transpose(1, 2).reshape(B, L_q, -1), weights["w_o"].t(), weights.get("b_o"))
