"""The float64 NumPy oracle: the textbook's code, one concept per module.

Every function follows the implementation contract in DESIGN.md. It is written
to be read, not to be fast; `impls/` holds the fast versions.
"""

from reference.attention import attention_weights, masked_softmax, scaled_dot_product_attention
from reference.batch_norm import BatchNorm
from reference.heads import merge_heads, split_heads
from reference.layer_norm import layer_norm
from reference.masks import causal_mask, padding_mask, visible
from reference.multi_head import multi_head_attention
from reference.positional import sinusoidal_positional_encoding

__all__ = [
    "BatchNorm",
    "attention_weights",
    "causal_mask",
    "layer_norm",
    "masked_softmax",
    "merge_heads",
    "multi_head_attention",
    "padding_mask",
    "scaled_dot_product_attention",
    "sinusoidal_positional_encoding",
    "split_heads",
    "visible",
]
