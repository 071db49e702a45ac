"""The float64 NumPy reference (`reference/`), exposed as an implementation under test.

Running the spec against the reference itself checks the suite's own claims: every
test must pass here, or the test (not the implementation) is wrong.
"""

from reference import (
    attention_weights,
    layer_norm,
    layer_norm_backward,
    merge_attention,
    merge_heads,
    multi_head_attention,
    paged_attention,
    rotary_embedding,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
    sinusoidal_positional_encoding,
    split_heads,
    t5_relative_position_bucket,
)

BACKEND = "numpy"
DTYPES = ("float64",)

__all__ = [
    "BACKEND",
    "DTYPES",
    "attention_weights",
    "layer_norm",
    "layer_norm_backward",
    "merge_attention",
    "merge_heads",
    "multi_head_attention",
    "paged_attention",
    "rotary_embedding",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_backward",
    "sinusoidal_positional_encoding",
    "split_heads",
    "t5_relative_position_bucket",
]
