"""Hugging Face transformers' SDPA attention, `transformers.integrations.sdpa_attention.sdpa_attention_forward`,
with its own mask pipeline (`transformers.masking_utils.sdpa_mask`; adapters/support/hf_masks.py).

Conversions:

- q, k, v (..., L, d) are HF's (batch, heads, length, d) with the leading dimensions as the batch and
  one head; its answer, (batch, length, heads, d), goes back to (..., L_q, d_v).
- The mask and `is_causal` go through HF's pipeline: a boolean 4-D mask (True = may attend) from
  `sdpa_mask` with queries at positions L_k - L_q .. L_k - 1, as in generation with a KV cache. When
  the pipeline returns no mask (it leaves the causal case to SDPA's flag), `is_causal=True` is passed.
  With a mask of the user's, the pipeline may not skip it (`allow_is_causal_skip=False`, as HF's
  `create_causal_mask` does when given a mask function of the user's).
- A float bias is HF's `position_bias` (what T5 passes).
- `attention_weights`: this function returns no weights; P is the output for V = I.

Speed: each call runs on one intra-op thread (adapters/support/threads.py: on a shared machine PyTorch's
thread pool makes a call on the spec's small inputs many times slower), which changes no result.
"""

import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import sdpa_mask

from adapters.support import hf_masks as hf
from adapters.support.threads import one_thread

BACKEND = "torch"
DTYPES = ("float64", "float32")
CONTRACT = ("scaled_dot_product_attention", "attention_weights")


@one_thread()
def _attend(q, k, v, mask, is_causal, scale, bias):
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    L_q, L_k = q.shape[-2], k.shape[-2]
    fn, offset = hf.mask_function(mask, is_causal, lead, L_q, L_k)
    q4, k4, v4 = (hf.flat(x, lead) for x in (q, k, v))
    attention_mask = sdpa_mask(batch_size=q4.shape[0], q_length=L_q, kv_length=L_k, q_offset=offset,
                               mask_function=fn, allow_is_causal_skip=mask is None, device=q.device)
    position_bias = None if bias is None else bias.to(q.dtype).expand(*lead, L_q, L_k).reshape(-1, 1, L_q, L_k)
    out, _ = sdpa_attention_forward(hf.module(is_causal), q4, k4, v4, attention_mask, scaling=scale,
                                    is_causal=is_causal, position_bias=position_bias)
    return hf.unflat(out, lead)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None):
    """sdpa_attention_forward(layer, q, k, v, sdpa_mask(...), scaling, is_causal, position_bias)."""
    return _attend(q, k, v, mask, is_causal, scale, bias)


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None):
    """The output for V = I (L_k, L_k): the weights, (..., L_q, L_k)."""
    return _attend(q, k, torch.eye(k.shape[-2], dtype=q.dtype), mask, is_causal, scale, bias)
