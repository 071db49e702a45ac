"""Hugging Face transformers' T5 relative-position buckets, `transformers.models.t5.modeling_t5.T5Attention._relative_position_bucket`
(a static method of T5's attention layer: the bucket of each key-minus-query distance, which indexes
the layer's learned bias table).

Conversions: none. HF's `relative_position` is memory_position - query_position, the contract's j - i,
and its arguments are the contract's (bidirectional, num_buckets, max_distance). The distances go in as
int64, as the contract gives them; HF takes the logarithm of the far distances in float32
(`relative_position.float()`) and truncates it to an integer with `.to(torch.long)`: left as it is.
The function is a private name of HF's, the one every T5-style model in transformers copies.
"""

from transformers.models.t5.modeling_t5 import T5Attention

BACKEND = "torch"
DTYPES = ("float64", "float32")
CONTRACT = ("t5_relative_position_bucket",)


def t5_relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """T5Attention._relative_position_bucket(relative_position, bidirectional, num_buckets, max_distance)."""
    return T5Attention._relative_position_bucket(relative_position, bidirectional=bidirectional,
                                                 num_buckets=num_buckets, max_distance=max_distance)
