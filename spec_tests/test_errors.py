"""Chapter: bad input and hygiene (docs/errors.md). Claims ERR-1, ERR-2.

CONTRACT.md: bad input raises ValueError with a message that names the offending values; inputs are
never modified in place; outputs have the input's dtype; results are deterministic.
"""

import numpy as np
import pytest

from spec_tests.harness import check
from spec_tests.harness.arrays import native_dtype_name
from spec_tests.harness.strategies import mha_weights, normal

claim = pytest.mark.claim
SDPA, WEIGHTS, MHA, LN = "scaled_dot_product_attention", "attention_weights", "multi_head_attention", "layer_norm"
BOOL_OR_DTYPE = ("bool", "float")  # a float mask: the message says it must be boolean, or names its dtype


def _mha(D=8, H=2, L_q=3, L_k=3, **kwargs):
    x, kv = normal(1, (2, L_q, D)), normal(2, (2, L_k, D))
    return (x, kv, kv, mha_weights(3, D, True), H), kwargs


# (function, inputs, values the message must name)
BAD_INPUTS = {
    "sdpa: q and k feature sizes differ": (SDPA, lambda: ((normal(1, (2, 5, 13)), normal(2, (2, 7, 17)),
                                                           normal(3, (2, 7, 4))), {}), (13, 17)),
    "sdpa: k and v lengths differ": (SDPA, lambda: ((normal(1, (5, 4)), normal(2, (11, 4)), normal(3, (19, 4))), {}),
                                     (11, 19)),
    "sdpa: mask does not broadcast": (SDPA, lambda: ((normal(1, (5, 4)), normal(2, (7, 4)), normal(3, (7, 3))),
                                                     {"mask": np.ones((9, 11), dtype=bool)}), (9, 11)),
    "sdpa: mask is not boolean": (SDPA, lambda: ((normal(1, (5, 4)), normal(2, (7, 4)), normal(3, (7, 3))),
                                                 {"mask": np.ones((5, 7))}), (BOOL_OR_DTYPE,)),
    "weights: q and k feature sizes differ": (WEIGHTS, lambda: ((normal(1, (5, 13)), normal(2, (7, 17))), {}), (13, 17)),
    "weights: mask does not broadcast": (WEIGHTS, lambda: ((normal(1, (5, 4)), normal(2, (7, 4))),
                                                           {"mask": np.ones((9, 11), dtype=bool)}), (9, 11)),
    "weights: mask is not boolean": (WEIGHTS, lambda: ((normal(1, (5, 4)), normal(2, (7, 4))),
                                                       {"mask": np.ones((5, 7))}), (BOOL_OR_DTYPE,)),
    "split_heads: D not divisible by H": ("split_heads", lambda: ((normal(1, (2, 3, 12)), 5), {}), (12, 5)),
    "split_heads: zero heads": ("split_heads", lambda: ((normal(1, (2, 3, 12)), 0), {}), (0,)),
    "split_heads: negative heads": ("split_heads", lambda: ((normal(1, (2, 3, 12)), -3), {}), (-3,)),
    "mha: D not divisible by H": (MHA, lambda: _mha(D=12, H=5), (12, 5)),
    "mha: zero heads": (MHA, lambda: _mha(H=0), (0,)),
    "mha: mask does not broadcast": (MHA, lambda: _mha(mask=np.ones((5, 3), dtype=bool)), (5,)),
    "mha: mask is not boolean": (MHA, lambda: _mha(mask=np.ones((2, 1, 1, 3))), (BOOL_OR_DTYPE,)),
    "layer_norm: gamma has the wrong shape": (LN, lambda: ((normal(1, (4, 8)), np.ones(5), np.zeros(8)), {}), (5,)),
    "layer_norm: beta has the wrong shape": (LN, lambda: ((normal(1, (4, 8)), np.ones(8), np.zeros((3, 8))), {}), (3,)),
}


# ---------------------------------------------------------------------------------- ERR-1
@claim("ERR-1")
@pytest.mark.parametrize("case", list(BAD_INPUTS), ids=list(BAD_INPUTS))
def test_bad_input_raises_value_error_naming_the_values(impl, case):
    fname, make, names = BAD_INPUTS[case]
    args, kwargs = make()
    check.raises_value_error(impl, fname, args, kwargs, names, f"{case}: ValueError naming {names}")


# ---------------------------------------------------------------------------------- ERR-2
def _good_calls():
    q, k, v = normal(1, (2, 2, 5, 4)), normal(2, (2, 2, 6, 4)), normal(3, (2, 2, 6, 3))
    mask = np.random.default_rng(4).random((2, 1, 5, 6)) < 0.7
    x = normal(5, (2, 5, 8))
    return {
        SDPA: ((q, k, v), {"mask": mask, "is_causal": True}),
        WEIGHTS: ((q, k), {"mask": mask}),
        "split_heads": ((x, 2), {}),
        "merge_heads": ((q,), {}),
        MHA: ((x, x, x, mha_weights(6, 8, True), 2), {"mask": mask[:, :, :, :5], "is_causal": True}),
        LN: ((x, normal(7, (8,)), normal(8, (8,))), {"eps": 1e-3}),
    }


FUNCTIONS = list(_good_calls())


@claim("ERR-2")
@pytest.mark.parametrize("fname", FUNCTIONS)
def test_inputs_are_never_modified(impl, fname):
    """After the call, every input array (weights and mask too) holds exactly what it held before."""
    args, kwargs = _good_calls()[fname]
    native_args, native_kwargs = impl.native(args), impl.native(kwargs)
    before = impl.to_numpy((native_args, native_kwargs))
    impl.call_native(fname, *native_args, **native_kwargs)
    after = impl.to_numpy((native_args, native_kwargs))
    flat_before, flat_after = _flatten(before), _flatten(after)
    for (name, a), (_, b) in zip(flat_before, flat_after):
        check.exactly(impl, b, a, f"{fname} leaves its input {name} unmodified")


def _flatten(obj, prefix="input"):
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in _flatten(v, f"{k}")]
    if isinstance(obj, (tuple, list)):
        return [p for i, v in enumerate(obj) for p in _flatten(v, f"{prefix}[{i}]")]
    return [(prefix, obj)] if isinstance(obj, np.ndarray) else []


@claim("ERR-2")
@pytest.mark.parametrize("fname", FUNCTIONS)
def test_output_keeps_the_input_dtype(impl, fname):
    args, kwargs = _good_calls()[fname]
    out = impl.call_native(fname, *impl.native(args), **impl.native(kwargs))
    seen = native_dtype_name(out)
    check.holds(impl, seen == impl.dtype, f"{fname} given {impl.dtype} inputs returns {impl.dtype}",
                [f"returned dtype {seen}"])


@claim("ERR-2")
@pytest.mark.parametrize("fname", FUNCTIONS)
def test_repeated_calls_give_identical_results(impl, fname):
    """The same call twice, with another call in between, gives bit-for-bit the same result."""
    args, kwargs = _good_calls()[fname]
    first = impl.call(fname, *args, **kwargs)
    other_args = tuple(a * 2.0 if isinstance(a, np.ndarray) and a.dtype != bool else a for a in args)
    impl.call(fname, *other_args, **kwargs)
    second = impl.call(fname, *args, **kwargs)
    check.equal(impl, second, first, f"{fname} called twice on the same input gives identical results")
