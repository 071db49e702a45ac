"""What the mutation run mutates, and which chapters' tests concern each function.

A mutant is reported under its function's first chapter and runs through the test modules of every chapter
listed: the chapters whose claims call the mutated function, so one mutant costs one chapter-sized run, not
the whole suite. A helper module (impls/_mask_keywords.py, impls/_heads.py, impls/_tiling.py) is mutated in a
copy and loaded in place of the original by a copy of the implementation that imports it (its `host`).

Operators: cosmic-ray's core operators restricted to the slips a learner makes (OPERATORS below): a changed
constant, + for -, * for /, a boundary moved (< for <=), a negation added or dropped, True for False, `and`
for `or`, `is` for `is not`. Swaps that can only raise a TypeError on arrays (<< for *, ~ on a float) are
left out: they say nothing about the suite.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OPERATORS = (
    "core/NumberReplacer",
    "core/ReplaceBinaryOperator_(Mul_Div|Div_Mul|Add_Sub|Sub_Add|FloorDiv_Div|FloorDiv_Mul|Pow_Mul|Mod_FloorDiv"
    "|BitAnd_BitOr|BitOr_BitAnd)",
    "core/ReplaceComparisonOperator_(Lt_LtE|LtE_Lt|Gt_GtE|GtE_Gt|Eq_NotEq|NotEq_Eq|Is_IsNot|IsNot_Is|In_NotIn"
    "|NotIn_In)",
    "core/ReplaceUnaryOperator_Delete_(USub|Not|Invert)",
    "core/AddNot",
    "core/Replace(True|False)With(False|True)",
    "core/Replace(And|Or)With(Or|And)",
    "core/ReplaceBreakWithContinue",
    "core/ZeroIterationForLoop",
)

SDPA = ("sdpa", "masks", "softcap_sinks", "log_sum_exp", "variable_length", "mask_algebra", "precision", "errors")
MHA = ("multi_head", "masks", "residual", "variable_length", "precision", "errors")
POS = ("positional", "precision", "errors")
LN = ("layer_norm", "residual", "precision", "errors")
GRAD = ("gradients", "errors")
DROP = ("dropout",)  # the functions that take dropout_p run the dropout chapter too
EVERYTHING = ("sdpa", "masks", "multi_head", "layer_norm", "positional", "residual", "variable_length",
              "softcap_sinks", "log_sum_exp", "mask_algebra", "gradients", "efficient", "dropout", "precision",
              "errors")


@dataclass(frozen=True)
class Target:
    name: str  # how the report names it
    path: str  # the file mutated, relative to the repository
    chapters: dict  # function name -> chapters (the first is the one the mutant is reported under)
    host: str | None = None  # for a helper module: the implementation that imports it
    module: str | None = None  # for a helper module: its import name
    default: tuple = field(default=EVERYTHING)  # code outside every listed function


NUMPY_FAST = {
    "_visible": ("masks", *SDPA[:1], *SDPA[2:]),
    "_softmax_inplace": SDPA,
    "_softmax_with_sink_inplace": ("softcap_sinks", "sdpa", "log_sum_exp", "errors"),
    "_weights": SDPA + ("positional",),
    "_default_scale": SDPA,
    "attention_weights": SDPA + DROP,
    "_dropout": ("dropout", "errors"),
    "scaled_dot_product_attention": SDPA + DROP,
    "_log_sum_exp": ("log_sum_exp", "softcap_sinks", "errors"),
    "merge_attention": ("log_sum_exp", "errors"),
    "split_heads": MHA,
    "merge_heads": MHA,
    "_linear": MHA,
    "_fused": MHA,
    "_to_heads": MHA,
    "multi_head_attention": MHA + DROP,
    "layer_norm": LN,
    "sinusoidal_positional_encoding": POS,
    "rotary_embedding": POS,
    "t5_relative_position_bucket": POS,
    "layer_norm_backward": GRAD,
    "_reduce_to": GRAD,
    "scaled_dot_product_attention_backward": GRAD,
    "paged_attention": ("efficient", "errors"),
}

TORCH_NAIVE = {
    "_visible": NUMPY_FAST["_visible"],
    "_attention_weights": SDPA + ("positional",),
    "_check_softcap_and_sinks": ("softcap_sinks", "errors"),
    "_scale": SDPA,
    "attention_weights": SDPA + DROP,
    "_dropout": ("dropout", "errors"),
    "scaled_dot_product_attention": SDPA + DROP,
    "merge_attention": ("log_sum_exp", "errors"),
    "split_heads": MHA,
    "merge_heads": MHA,
    "_linear": MHA,
    "multi_head_attention": MHA + DROP,
    "layer_norm": LN,
    "sinusoidal_positional_encoding": POS,
    "rotary_embedding": POS,
    "t5_relative_position_bucket": POS,
    "paged_attention": ("efficient", "errors"),
}

TARGETS = {t.name: t for t in (
    Target("numpy_fast", "impls/numpy_fast.py", NUMPY_FAST),
    Target("torch_naive", "impls/torch_naive.py", TORCH_NAIVE),
    Target("_mask_keywords", "impls/_mask_keywords.py",
           {"_window": ("mask_algebra", "masks", "errors"), "extra_mask": ("mask_algebra", "masks", "errors"),
            "and_masks": ("mask_algebra", "masks", "errors"),
            "values_no_query_sees_zeroed": ("masks", "efficient", "errors")},
           host="impls/numpy_chunked.py", module="impls._mask_keywords"),  # the one host that calls all four
    Target("_heads", "impls/_heads.py", {"multi_head": MHA}, host="impls/numpy_chunked.py", module="impls._heads"),
    Target("_tiling", "impls/_tiling.py", {},
           host="impls/numpy_chunked.py", module="impls._tiling", default=("efficient", "sdpa", "masks", "errors")),
)}


def chapters_of(target: Target, function: str | None) -> tuple:
    """The chapters whose tests a mutant of `function` runs through (the first names it in the report)."""
    return target.chapters.get(function, target.default) if function else target.default
