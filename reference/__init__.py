"""The float64 NumPy reference: the textbook's code, one concept per module.

Every function follows the implementation contract in CONTRACT.md. It is written
to be read, not to be fast; `impls/` holds the fast versions.
"""

from reference.alibi import alibi_bias, alibi_slopes
from reference.attention import attention_weights, masked_softmax, scaled_dot_product_attention
from reference.attention_backward import scaled_dot_product_attention_backward
from reference.batch_norm import BatchNorm
from reference.grouped_query import repeat_kv_heads
from reference.heads import merge_heads, split_heads
from reference.kv_cache import KVCache, attend_with_cache, decode
from reference.layer_norm import layer_norm
from reference.layer_norm_backward import layer_norm_backward
from reference.log_sum_exp import merge_attention
from reference.masks import causal_mask, padding_mask, visible
from reference.multi_head import multi_head_attention
from reference.paged_cache import paged_attention
from reference.positional import sinusoidal_positional_encoding
from reference.rotary import half_split_permutation, rotary_embedding, rotary_embedding_half_split
from reference.t5_bias import relative_positions, t5_bias, t5_relative_position_bucket

__all__ = [
    "BatchNorm",
    "KVCache",
    "alibi_bias",
    "alibi_slopes",
    "attend_with_cache",
    "attention_weights",
    "causal_mask",
    "decode",
    "half_split_permutation",
    "layer_norm",
    "layer_norm_backward",
    "masked_softmax",
    "merge_attention",
    "merge_heads",
    "multi_head_attention",
    "padding_mask",
    "paged_attention",
    "relative_positions",
    "repeat_kv_heads",
    "rotary_embedding",
    "rotary_embedding_half_split",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_backward",
    "sinusoidal_positional_encoding",
    "split_heads",
    "t5_bias",
    "t5_relative_position_bucket",
    "visible",
]
