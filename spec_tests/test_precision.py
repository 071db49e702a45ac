"""Chapter: precision (docs/precision.md). Claims PREC-1, PREC-2, PREC-3.

Lecture note 2 §4.2: mixed precision (FP16 with FP32) speeds training up; LayerNorm must stay in
FP32. What an implementation in float16 or bfloat16 owes (CONTRACT.md, "Comparing numbers"):

    |out - reference_float64| <= FACTOR * |naive_dtype - reference_float64| + FLOOR_ULPS ulp(dtype) * T

where naive_dtype is the reference code run in that dtype, each operation accumulating in
float32 and rounding its result, as PyTorch does, and T the size of the terms that sum to the
expected output (spec_tests/harness/tolerance.py holds the rule and its numbers). An
implementation that keeps its softmax and accumulators in float32 (every flash kernel)
errs less than the naive one; one that lets exp() overflow, or sums in float16, errs more.

Also in this chapter's territory, tested with their own chapters: MASK-6 (masked attention
in low precision, test_masks.py) and LN-7's low-precision half (test_layer_norm.py).
"""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import reference
from spec_tests.harness import carried, check, tolerance
from spec_tests.harness.strategies import SEEDS, LayerNormCase, attention_cases, mha_cases, mha_weights, normal
from spec_tests.harness.subject import not_applicable

claim = pytest.mark.claim
SDPA = "scaled_dot_product_attention"
LOW = ("float16", "bfloat16")

# Rows long enough for float16 sums to lose digits; scores large enough (q, k of std 2.5:
# scores of std ~6, maxima ~20) that exp() without the row maximum overflows float16 (> 11.1).
ROW_LENGTHS = st.sampled_from([1, 7, 33, 130])
LOW_PRECISION_CASES = st.one_of(
    attention_cases(lengths=ROW_LENGTHS, batch=st.sampled_from([(), (2,)]), magnitude=1.0),
    attention_cases(lengths=ROW_LENGTHS, batch=st.sampled_from([(), (2,)]), magnitude=2.5),
)


def _low_precision_only(impl, what: str) -> None:
    if impl.dtype not in LOW:
        not_applicable(f"{what} is about float16 and bfloat16, and this run is {impl.dtype}")


# ---------------------------------------------------------------------------------- PREC-1
@claim("PREC-1")
@given(case=LOW_PRECISION_CASES)
def test_low_precision_attention_is_within_the_rule(impl, case):
    """float16/bfloat16 attention, masked or causal, long rows and large scores: within 4x the naive error + floor (the tolerance model)."""
    _low_precision_only(impl, "PREC-1")
    out = check.oracle(impl, SDPA, case.q, case.k, case.v, **case.kwargs)
    check.holds(impl, bool(np.isfinite(out).all()), f"{impl.dtype} attention is finite", arrays=[out])


@claim("PREC-1")
@given(seed=SEEDS, L=ROW_LENGTHS, offset=st.sampled_from([30.0, -200.0]))
def test_low_precision_attention_with_offset_values(impl, seed, L, offset):
    """Values far from 0 (v = offset + noise): the weights must still sum to 1 closely, or the output drifts."""
    _low_precision_only(impl, "PREC-1")
    q, k = normal(seed, (2, L, 16)), normal(seed + 1, (2, L, 16))
    v = normal(seed + 2, (2, L, 8), 1.0, offset)
    check.oracle(impl, SDPA, q, k, v, is_causal=True)


@claim("PREC-1")
@settings(max_examples=4)  # each example is two rows of 1024 or 4096 keys; the pinned ones below always run
@given(seed=SEEDS, L_k=st.sampled_from([1024, 4096]), offset=st.sampled_from([1.0, 30.0]))
@example(seed=0, L_k=1024, offset=30.0)
@example(seed=1, L_k=4096, offset=1.0)
def test_low_precision_long_rows_are_within_the_rule(impl, seed, L_k, offset):
    """Four queries against 1024 and 4096 keys (v = offset + noise): a softmax whose sum or products lose digits
    in float16/bfloat16 stays within the rule on short rows and leaves it here, where the weights' sum drifts."""
    _low_precision_only(impl, "PREC-1")
    q, k = normal(seed, (2, 4, 16)), normal(seed + 1, (2, L_k, 16))
    v = normal(seed + 2, (2, L_k, 8), 1.0, offset)
    check.oracle(impl, SDPA, q, k, v)


@claim("PREC-1")
@settings(max_examples=15)
@given(case=mha_cases())
def test_low_precision_multi_head_attention_is_within_the_rule(impl, case):
    """float16/bfloat16 multi-head attention (projections, heads, W^O) against the float64 reference, within the rule."""
    _low_precision_only(impl, "PREC-1")
    check.oracle(impl, "multi_head_attention", *case.args, **case.kwargs)


# ---------------------------------------------------------------------------------- PREC-2
@claim("PREC-2")
@given(seed=SEEDS, D=st.sampled_from([64, 256, 1024]), mean=st.sampled_from([0.0, 300.0]),
       low=st.sampled_from(LOW))
def test_layer_norm_runs_in_float32_under_autocast(impl, seed, D, mean, low):
    """Inside torch.autocast(dtype=float16/bfloat16), layer_norm of float32 input returns float32, as accurate
    as float32: autocast lowers matmuls, and statistics computed by one (x @ 1/D) would lose ~3 digits."""
    if impl.backend != "torch":
        not_applicable(f"autocast is PyTorch's, and {impl.name} is a {impl.backend} implementation")
    if impl.dtype != "float32":
        not_applicable(f"autocast lowers float32 work to {low}; this run is {impl.dtype}")
    import torch

    x, g, b = normal(seed, (4, D), 1.0, mean), normal(seed + 1, (D,), 0.5, 1.0), normal(seed + 2, (D,))
    native = impl.native((x, g, b))
    with torch.autocast(device_type=impl.impl.device, dtype=getattr(torch, low)):
        y = impl.call_native("layer_norm", *native)
    check.holds(impl, y.dtype == torch.float32,
                f"under torch.autocast({low}), layer_norm of a float32 input returns float32",
                [f"seen dtype {y.dtype}"])
    check.against(impl, impl.to_numpy(y), reference.layer_norm, (x, g, b), {},
                  f"layer_norm under torch.autocast({low}) against the float64 reference, within the float32 rule")


# ---------------------------------------------------------------------------------- PREC-3
PREC3_FUNCTIONS = {"sdpa": SDPA, "mha": "multi_head_attention", "layer_norm": "layer_norm",
                   "rope": "rotary_embedding"}


def _float64_only(impl) -> None:
    if impl.dtype != "float64":
        not_applicable(f"PREC-3 is about float64 input, and this run is {impl.dtype}")


def _charge_a_precision_step(impl, fname: str, evidence) -> None:
    """Fail with the input's values, the digits and the sizes when `evidence` shows a float32, float16 or
    bfloat16 step inside a float64 call (the precision it reached: evidence.step)."""
    if evidence is None or not evidence.step:
        return
    low = evidence.step
    ulps = evidence.err / (tolerance.EPS[low] * max(evidence.terms, 1e-300))
    check.compare(impl, evidence.seen, evidence.expected, evidence.bound,
                  f"{fname}(...) of float64 input against the float64 reference: its error {evidence.err:.3g} is "
                  f"{ulps:.2g} {low} ulp of the output's terms and within the {low} rule "
                  f"({evidence.allowed_there:.3g}), so some step (the scores, the softmax, the statistics, the "
                  f"angles or the output) ran in {low}; keep every step in the input's dtype",
                  calls=[c for c in (evidence.call,) if c is not None], inputs=True)


@claim("PREC-3")
@given(case=attention_cases(masked=False, causal=False), data=st.data(), B=st.integers(1, 2), seed=SEEDS)
def test_float64_input_is_computed_in_float64(impl, case, data, B, seed):
    """float64 in, float64 accuracy: a float32 (or float16, bfloat16) step anywhere inside a float64 call
    (`torch.tensor(x)`, `.float()`, scores cast to float32, a softmax with dtype=float32 or in float16,
    LayerNorm's statistics in float32, RoPE's angles in float32) keeps the dtype but only 7 (or 3) digits. This
    claim pays for that bug, once: it fails when the error is far above float64's and of a lower precision's
    size, within its rule (tolerance.precision_step); the other claims judge such an implementation at the
    precision it reached (spec_tests/harness/carried.py) and say so. A larger error is another claim's bug."""
    _float64_only(impl)
    present = [w for w, fname in PREC3_FUNCTIONS.items() if impl.callable(fname)]  # drawn among those it has
    which = data.draw(st.sampled_from(present or ["sdpa"]), label="which")
    if which == "sdpa":
        fname, args = SDPA, (case.q, case.k, case.v)
    elif which == "mha":  # with or without biases (a module whose projections have none takes the latter)
        x = normal(seed, (B, case.L_q, 4))
        biases = data.draw(st.booleans(), label="biases")
        fname, args = "multi_head_attention", (x, x, x, mha_weights(seed + 1, 4, biases), 2)
    elif which == "rope":  # near positions (float64's allowance grows with the largest angle m θ_0 = m)
        fname, args = "rotary_embedding", (normal(seed, (B, case.L_q, 8)), np.arange(case.L_q))
    else:
        ln = LayerNormCase((B, case.L_q), 8, seed)
        fname, args = "layer_norm", (ln.x, ln.gamma, ln.beta)
    _charge_a_precision_step(impl, fname, carried.precision_evidence(impl, fname, args, {}))


@claim("PREC-3")
def test_float64_input_keeps_float64_precision_on_the_fixed_inputs(impl):
    """The fixed inputs on which the other claims decide whether to judge an implementation at a lower precision:
    when its attention, multi-head attention, LayerNorm or RoPE shows a float32, float16 or bfloat16 step there,
    this claim fails (and is the one that pays), on the smallest cut of that input that shows it, so that no
    claim is ever judged at a lower precision while PREC-3 passes."""
    _float64_only(impl)
    present = [fname for fname in carried.PRECISION_FUNCTIONS if impl.callable(fname)]
    if not present:
        not_applicable(f"{impl.name} has none of {', '.join(carried.PRECISION_FUNCTIONS)}")
    for fname in present:
        evidence = carried.step_evidence(impl, fname)
        if evidence is not None:
            _charge_a_precision_step(impl, fname, carried.smallest_step(impl, fname, evidence))
