"""The honest part of every hostile submission: the correct functions of impls/mutants/_base.py.

A hostile submission takes everything from here and misbehaves in `layer_norm` (or at import),
so the grade it should get is known: full points for the claims that do not use layer_norm,
nothing for those that do (tests/test_hostile.py). One dtype keeps the runs short.
"""
from impls.mutants._base import (  # noqa: F401
    BACKEND,
    attention_weights,
    merge_heads,
    multi_head_attention,
    scaled_dot_product_attention,
    sinusoidal_positional_encoding,
    split_heads,
)
from impls.mutants._base import layer_norm as correct_layer_norm  # noqa: F401

DTYPES = ("float64",)
__all__ = ["BACKEND", "DTYPES", "attention_weights", "merge_heads", "multi_head_attention",
           "scaled_dot_product_attention", "sinusoidal_positional_encoding", "split_heads", "correct_layer_norm"]
