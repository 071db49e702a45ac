"""Generated correct variants pass every claim; an all-zero output and a wrong scale fail in every dtype.

The variants (tests/variants/) are semantics-preserving rewrites of correct code. A bound whose yardstick is
one lucky rounding of the reference's own order of operations fails one of them: this is what keeps the
tolerance model honest against code nobody here wrote. Their whole-suite run under `thorough` takes minutes,
so it runs when MHA_SPEC_VARIANTS is set (`.ci/variants.sh` sets it, with a modest example count); the bounds'
teeth below always run.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import reference
from spec_tests.harness import tolerance
from spec_tests.harness.arrays import round_trip
from tests import variants
from tests.helpers import missing_packages, run_suite

LOW = ("float32", "float16", "bfloat16")


def _load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(variants.VARIANTS))
def test_each_variant_is_a_complete_contract_module(name, tmp_path):
    """Each generated file imports and carries the seven core functions and the variant's own ones."""
    variant = variants.VARIANTS[name]
    if variant.base == variants.TORCH_BASE and missing_packages(["torch"]):
        pytest.skip("needs torch")
    (path,) = variants.write(tmp_path, [name])
    module = _load(path)
    core = ("scaled_dot_product_attention", "attention_weights", "split_heads", "merge_heads",
            "multi_head_attention", "layer_norm", "sinusoidal_positional_encoding")
    assert all(callable(getattr(module, f, None)) for f in core + tuple(variant.functions)), name
    assert module.__doc__.startswith(f"Correct variant {name}")


@pytest.mark.skipif(not os.environ.get("MHA_SPEC_VARIANTS"), reason="minutes long: .ci/variants.sh runs it")
def test_every_correct_variant_passes_every_claim_under_thorough(tmp_path):
    """One run of the suite over every variant (--impl a,b,...), under `thorough`, MHA_SPEC_VARIANT_EXAMPLES
    examples per test (default 10), spread over MHA_SPEC_VARIANT_WORKERS processes (default 2)."""
    names = [n for n, v in sorted(variants.VARIANTS.items())
             if v.base != variants.TORCH_BASE or not missing_packages(["torch"])]
    paths = variants.write(tmp_path / "variants", names)
    examples = os.environ.get("MHA_SPEC_VARIANT_EXAMPLES", "10")
    workers = os.environ.get("MHA_SPEC_VARIANT_WORKERS", "2")
    code, out, report = run_suite("--impl", ",".join(str(p) for p in paths), "--hypothesis-profile=thorough",
                                  "-n", workers, report=tmp_path / "r.json", env={"MHA_SPEC_EXAMPLES": examples},
                                  timeout=2400)
    assert report is not None, out[-3000:]
    bad = {(c, run): s for c, per in report["claims"].items() for run, s in per.items()
           if s not in ("passed", "not applicable", "not implemented", "partly implemented")}  # a base's own scope
    described = {n: variants.VARIANTS[n].what for n in names}
    assert code == 0 and not bad, f"correct variants fail: {bad}\n{described}\n" + out[-6000:]


# --------------------------------------------------------------------------- the bounds keep their teeth
def _normal(seed, shape, scale=1.0, mean=0.0):
    return mean + scale * np.random.default_rng(seed).standard_normal(shape)


def _fails(dtype, fname, args, kwargs, wrong):
    """Is `wrong` (a result computed on the rounded inputs) outside the bound of fname in `dtype`?"""
    r_args = tuple(round_trip(a, dtype) if isinstance(a, np.ndarray) else
                   ({k: round_trip(v, dtype) for k, v in a.items()} if isinstance(a, dict) else a) for a in args)
    fn = getattr(reference, fname)
    expected = fn(*r_args, **kwargs)
    bounds = tolerance.bound_against(dtype, fn, r_args, kwargs, expected, fname)
    seen = wrong(r_args)
    pairs = zip(seen, expected, bounds) if isinstance(expected, tuple) else [(seen, expected, bounds)]
    return all(tolerance.max_error(s, e) > b.allowed for s, e, b in pairs)


def _mha_weights(seed, D, G=None, H=1):
    d_k = D // H
    width = D if G is None else G * d_k
    w = {f"w_{n}": _normal(seed + i, (D, width if n in "kv" else D), D**-0.5) for i, n in enumerate("qkvo")}
    w.update({f"b_{n}": _normal(seed + 9 + i, (width if n in "kv" else D,), 0.1) for i, n in enumerate("qkvo")})
    return w


CASES = {  # fname -> (args, kwargs, the output with a wrong scale)
    "scaled_dot_product_attention": (
        lambda: ((_normal(1, (2, 5, 16)), _normal(2, (2, 7, 16)), _normal(3, (2, 7, 4))), {}),
        lambda a: reference.scaled_dot_product_attention(*a, scale=1.0)),  # scale 1 instead of 1/sqrt(d_k) = 1/4
    "attention_weights": (
        lambda: ((_normal(1, (3, 6, 16)), _normal(2, (3, 6, 16))), {"is_causal": True}),
        lambda a: reference.attention_weights(*a, is_causal=True, scale=1.0 / 16)),  # 1/d_k
    "long_rows": (  # one query against 1024 keys: the scale of a long row's softmax
        lambda: ((_normal(4, (1, 1, 8)), _normal(5, (1, 1024, 8)), _normal(6, (1, 1024, 8))), {}),
        lambda a: reference.scaled_dot_product_attention(*a, scale=8**-0.5 * 2.0)),
    "multi_head_attention": (
        lambda: ((_normal(7, (2, 4, 16)), _normal(8, (2, 5, 16)), _normal(9, (2, 5, 16)), _mha_weights(10, 16, H=4), 4),
                 {}),
        lambda a: reference.multi_head_attention(a[0], a[1], a[2], {**a[3], "w_q": a[3]["w_q"] / 2.0}, 4)),  # 1/sqrt(D)
    "gqa_multi_head_attention": (
        lambda: ((_normal(11, (1, 4, 16)), _normal(12, (1, 6, 16)), _normal(13, (1, 6, 16)),
                  _mha_weights(14, 16, G=2, H=4), 4), {"num_kv_heads": 2}),
        lambda a: reference.multi_head_attention(a[0], a[1], a[2], {**a[3], "w_q": a[3]["w_q"] / 2.0}, 4,
                                                 num_kv_heads=2)),
    "layer_norm": (
        lambda: ((_normal(15, (3, 8), 2.0, 1.0), _normal(16, (8,), 0.2, 1.0), _normal(17, (8,), 0.1)), {}),
        lambda a: a[1] * (a[0] - a[0].mean(-1, keepdims=True)) / a[0].std(-1, ddof=1, keepdims=True) + a[2]),  # D-1
    "rotary_embedding": (
        lambda: ((_normal(18, (2, 6, 8)), np.arange(100, 106)), {}),
        lambda a: reference.rotary_embedding(a[0], 2 * a[1])),  # angles twice too large
    "layer_norm_backward": (
        lambda: ((_normal(19, (4, 8)), _normal(20, (4, 8), 1.0, 3.0), _normal(21, (8,), 0.3, 1.0)), {}),
        lambda a: tuple(2.0 * g for g in reference.layer_norm_backward(*a))),
    "scaled_dot_product_attention_backward": (
        lambda: ((_normal(22, (2, 5, 4)), _normal(23, (2, 5, 16)), _normal(24, (2, 6, 16)), _normal(25, (2, 6, 4))), {}),
        lambda a: reference.scaled_dot_product_attention_backward(*a, scale=1.0)),
}


def _fname(case):
    return {"long_rows": "scaled_dot_product_attention", "gqa_multi_head_attention": "multi_head_attention"}.get(case, case)


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_all_zero_output_fails_in_every_dtype(case, dtype):
    make, _ = CASES[case]
    args, kwargs = make()
    zeros = lambda a: (lambda e: tuple(np.zeros_like(x) for x in e) if isinstance(e, tuple) else np.zeros_like(e))(  # noqa: E731
        getattr(reference, _fname(case))(*a, **kwargs))
    assert _fails(dtype, _fname(case), args, kwargs, zeros), f"an all-zero {case} passes in {dtype}"


@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_wrong_scale_fails_in_every_dtype(case, dtype):
    make, wrong = CASES[case]
    args, kwargs = make()
    assert _fails(dtype, _fname(case), args, kwargs, wrong), f"{case} with a wrong scale passes in {dtype}"


@pytest.mark.parametrize("dtype", LOW)
def test_a_wrong_base_of_the_sinusoidal_encoding_fails_in_every_dtype(dtype):
    """Base 10240 instead of 10000, and an all-zero encoding, outside positional_bound at length 64, D = 16."""
    expected = reference.sinusoidal_positional_encoding(64, 16)
    p, two_i = np.arange(64)[:, None], np.arange(0, 16, 2)
    wrong = np.zeros((64, 16))
    wrong[:, 0::2], wrong[:, 1::2] = np.sin(p / 10240.0 ** (two_i / 16)), np.cos(p / 10240.0 ** (two_i / 16))
    bound = tolerance.positional_bound(dtype, expected, 64, 16)
    assert tolerance.max_error(wrong, expected) > bound.allowed
    assert tolerance.max_error(np.zeros_like(expected), expected) > bound.allowed
