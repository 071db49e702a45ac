"""Hugging Face transformers' eager attention, `transformers.models.llama.modeling_llama.eager_attention_forward`
(the plain softmax(QK^T * scaling + mask) V of LLaMA and the models copied from it), with its own mask
pipeline (`transformers.masking_utils.eager_mask`; adapters/support/hf_masks.py).

Conversions:

- q, k, v (..., L, d) are HF's (batch, heads, length, d) with the leading dimensions as the batch and
  one head; its answer, (batch, length, heads, d), goes back to (..., L_q, d_v).
- The mask and `is_causal` go through HF's pipeline: `eager_mask` gives a float mask, 0 where a key is
  visible and the dtype's most negative number where it is hidden, with queries at positions
  L_k - L_q .. L_k - 1, as in generation with a KV cache; it is added to the scores.
- A float bias is added to that mask (what HF's T5 does with its position bias).
- `scaling` is the layer's head_dim ** -0.5 (as HF's attention layers set it) unless `scale` is given.
- `attention_weights` are the weights the function returns.

Speed: each call runs on one intra-op thread (adapters/support/threads.py: on a shared machine PyTorch's
thread pool makes a call on the spec's small inputs many times slower), which changes no result.
"""

import torch
from transformers.masking_utils import eager_mask
from transformers.models.llama.modeling_llama import eager_attention_forward

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
    attention_mask = eager_mask(batch_size=q4.shape[0], q_length=L_q, kv_length=L_k, q_offset=offset,
                                mask_function=fn, dtype=q.dtype, device=q.device)
    if bias is not None:
        position_bias = bias.to(q.dtype).expand(*lead, L_q, L_k).reshape(-1, 1, L_q, L_k)
        attention_mask = position_bias if attention_mask is None else position_bias + attention_mask
    scaling = q.shape[-1] ** -0.5 if scale is None else float(scale)
    out, weights = eager_attention_forward(hf.module(is_causal), q4, k4, v4, attention_mask, scaling=scaling)
    return hf.unflat(out, lead), weights.reshape(*lead, L_q, L_k)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None):
    """eager_attention_forward(layer, q, k, v, eager_mask(...) [+ bias], scaling)[0]."""
    return _attend(q, k, v, mask, is_causal, scale, bias)[0]


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None):
    """eager_attention_forward(...)[1]: the weights, (..., L_q, L_k)."""
    return _attend(q, k, torch.zeros_like(k), mask, is_causal, scale, bias)[1]
