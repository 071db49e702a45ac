"""scaled_dot_product_attention never returns (a busy loop); its twin, raise_in_sdpa, raises at once.

A hang must cost exactly what a crash costs: the same claims fail, nothing else (tests/test_hostile.py)."""
from tests.hostile._honest import *  # noqa: F401,F403
from tests.hostile._honest import correct_layer_norm

layer_norm = correct_layer_norm


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    n = 0
    while True:
        n += 1
