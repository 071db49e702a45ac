"""The honest twin of hang_in_sdpa: scaled_dot_product_attention raises at once instead of looping."""
from tests.hostile._honest import *  # noqa: F401,F403
from tests.hostile._honest import correct_layer_norm

layer_norm = correct_layer_norm


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    raise RuntimeError("not finished")
