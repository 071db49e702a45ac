"""Partial lower precision, charged once (spec_tests/harness/carried.py, tolerance.float32_step), and error carried
forward from a function's own formula to its masked calls.

Known bugs written the way outsiders write them do part of a float64 call in float32 (the scores, the softmax,
LayerNorm's statistics): each is found by PREC-3, on the fixed inputs every other claim decides by, and the other
claims judge it at float32 and say so. A formula bug in attention or multi-head attention is charged to SDPA-1 or
MHA-5, not again to the masks chapter; a masking bug still fails there.
"""

import numpy as np
import pytest

from spec_tests.harness import carried, check, context, feedback
from spec_tests.harness.context import CURRENT, current
from spec_tests.harness.loader import load
from spec_tests.harness.strategies import mha_weights
from spec_tests.harness.subject import Subject
from tests.helpers import MUTANTS_DIR, ROOT, missing_packages

PARTLY_FLOAT32 = {  # known bug -> the function whose fixed inputs show the float32 step
    "float32_scores_in_float64": "scaled_dot_product_attention",
    "float32_softmax_in_float64": "scaled_dot_product_attention",
    "float32_softmax_in_float64_torch": "scaled_dot_product_attention",
    "float32_layer_norm_stats_in_float64": "layer_norm",
    "computes_in_float32": "scaled_dot_product_attention",
}
CORRECT = ["numpy_fast", "torch_naive", "torch_sdpa", "numpy_chunked", "per_head_loop"]


def _subject(path, dtype="float64") -> Subject:
    if "torch" in path.read_text(encoding="utf-8") and missing_packages(["torch"]):
        pytest.skip("needs torch")
    return Subject(load(str(path)), dtype)


@pytest.fixture
def claims():
    """Run a check as a test of these claims would."""
    tokens = []

    def set_claims(*ids):
        tokens.append(CURRENT.set(context.TestInfo(nodeid=f"meta::charged_once::{'-'.join(ids)}", claims=ids)))

    yield set_claims
    for token in reversed(tokens):
        CURRENT.reset(token)


def _attention_inputs(seed=0):
    rng = np.random.default_rng(seed)
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 3))
    mask = rng.random((2, 3, 5)) < 0.6
    mask[..., 0] = True
    return q, k, v, mask


@pytest.mark.parametrize("name", sorted(PARTLY_FLOAT32))
def test_a_float32_step_inside_a_float64_call_is_found_on_the_fixed_inputs(name, claims):
    claims("MASK-1")
    subject = _subject(MUTANTS_DIR / f"{name}.py")
    fname = PARTLY_FLOAT32[name]
    evidence = carried.float32_evidence(subject, fname)
    assert evidence is not None and evidence.verdict == "float32", name
    assert carried.PRECISION_CLAIM in carried.lower_verdict(subject, fname)
    assert carried.judged_dtype(subject) == "float32"


@pytest.mark.parametrize("name", CORRECT)
def test_correct_implementations_show_no_float32_step(name, claims):
    claims("MASK-1")
    subject = _subject(ROOT / "impls" / f"{name}.py")
    assert carried.judged_dtype(subject) == "float64"
    assert all(carried.float32_evidence(subject, f) is None for f in carried.PRECISION_FUNCTIONS)


@pytest.mark.parametrize("name", ["layer_norm_eps_1e_6", "layer_norm_eps_outside_sqrt", "no_score_scaling"])
def test_a_small_error_of_another_kind_is_not_a_precision_step(name, claims):
    """eps = 1e-6 errs by about 1e-6, near float32's rule on some rows: it is the formula's bug, not precision."""
    claims("MASK-1")
    subject = _subject(MUTANTS_DIR / f"{name}.py")
    assert carried.judged_dtype(subject) == "float64"


def test_other_claims_judge_a_float32_softmax_at_float32_and_say_so(claims):
    claims("MASK-1")
    subject = _subject(MUTANTS_DIR / "float32_softmax_in_float64.py")
    q, k, v, mask = _attention_inputs(1)
    check.oracle(subject, "scaled_dot_product_attention", q, k, v, mask=mask)
    assert "judged at float32 precision" in carried.note_for(current().nodeid)


def test_prec_3_itself_is_judged_at_float64(claims):
    claims("PREC-3")
    subject = _subject(MUTANTS_DIR / "float32_softmax_in_float64.py")
    q, k, v, _ = _attention_inputs(1)
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, "scaled_dot_product_attention", q, k, v)


def test_float32_rounded_zeros_are_no_evidence_of_float32():
    assert not carried.float32_exact(np.zeros((2, 3)))
    assert carried.float32_exact(np.float32([0.1, 0.0]).astype(np.float64))


# ----------------------------------------------------------------- a formula's bug, not again the masks chapter's
def test_a_masked_call_of_a_wrong_formula_is_judged_against_its_own_plain_calls(claims):
    claims("MASK-1")
    subject = _subject(MUTANTS_DIR / "scale_after_softmax.py")
    q, k, v, mask = _attention_inputs(2)
    check.oracle(subject, "scaled_dot_product_attention", q, k, v, mask=mask)
    assert "one query row at a time" in carried.note_for(current().nodeid)


def test_the_formulas_own_chapter_still_fails_it(claims):
    claims("SDPA-1")
    subject = _subject(MUTANTS_DIR / "scale_after_softmax.py")
    q, k, v, mask = _attention_inputs(2)
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, "scaled_dot_product_attention", q, k, v, mask=mask)


@pytest.mark.parametrize("name", ["mask_inverted", "padding_mask_wrong_axis", "mask_after_softmax", "causal_top_left"])
def test_a_masking_bug_still_fails_the_masks_chapter(name, claims):
    claims("MASK-1")
    subject = _subject(MUTANTS_DIR / f"{name}.py")
    q, k, v, mask = _attention_inputs(3)
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, "scaled_dot_product_attention", q, k, v, mask=mask, is_causal=name == "causal_top_left")


def test_an_mha_that_adds_its_input_is_charged_to_mha_5_not_to_the_masks(claims):
    claims("MASK-5")
    subject = _subject(MUTANTS_DIR / "mha_adds_its_input.py")
    rng = np.random.default_rng(4)
    x, kv = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))
    padding = np.ones((2, 1, 1, 5), dtype=bool)
    padding[0, ..., 3:] = False
    check.oracle(subject, "multi_head_attention", x, kv, kv, mha_weights(5, 4, True), 2, mask=padding)
    assert "your multi_head_attention fails MHA-5" in carried.note_for(current().nodeid)
    claims("MHA-5")
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, "multi_head_attention", x, kv, kv, mha_weights(5, 4, True), 2, mask=padding)
