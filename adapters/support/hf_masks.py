"""Hugging Face transformers' own mask pipeline (transformers.masking_utils), shared by the adapters of
its attention functions (hf_sdpa.py, hf_eager.py); layout helpers for its (B, H, L, d) functions.

HF builds every mask from mask functions of (batch, head, q_idx, kv_idx): `causal_mask_function`
(kv_idx <= q_idx) or `bidirectional_mask_function`, ANDed (`and_masks`) with further ones, over query
positions that start at `q_offset`. With a KV cache of P past tokens the L_q new queries sit at
positions P .. P + L_q - 1 of the L_k = P + L_q keys: q_offset = L_k - L_q, which is how HF's
generation calls it, so its causal mask is bottom-right aligned; more queries than keys has no place
there (out of scope with causal). The contract's mask (True = may attend) is one more mask function,
reading it.
"""

import math

import torch
from transformers.masking_utils import and_masks, bidirectional_mask_function, causal_mask_function

from spec_tests import OutOfScope


def flat(x, lead):
    """(..., L, d) -> (N, 1, L, d): HF's (batch, heads, length, features) with the leading dims as batch."""
    return x.expand(*lead, *x.shape[-2:]).reshape(math.prod(lead), 1, *x.shape[-2:])  # N given: L may be 0


def unflat(out, lead):
    """HF's attention functions answer (N, L, 1, d) (heads after length): back to (..., L, d)."""
    return out.reshape(*lead, out.shape[1], out.shape[-1])


def mask_function(mask, is_causal, lead, L_q, L_k):
    """HF's mask function for the contract's mask and causal flag, and the query offset it runs with."""
    if is_causal and L_q > L_k:
        raise OutOfScope("Hugging Face's mask pipeline places the queries at the last positions of the keys "
                         "(generation with a KV cache): causal attention with more queries than keys has no such place")
    offset = L_k - L_q if is_causal else 0  # without causal, the positions do not matter
    base = causal_mask_function if is_causal else bidirectional_mask_function
    if mask is None:
        return base, offset
    N = 1
    for n in lead:
        N *= n
    m = mask.expand(*lead, L_q, L_k).reshape(N, L_q, L_k)

    def given(batch_idx, head_idx, q_idx, kv_idx):
        return m[batch_idx, q_idx - offset, kv_idx]

    return and_masks(base, given), offset


def module(is_causal):
    """The attention layer HF's functions read attributes of (is_causal, num_key_value_groups, training)."""
    layer = torch.nn.Module()
    layer.is_causal, layer.num_key_value_groups = is_causal, 1
    layer.train(False)
    return layer
