"""One bug, its own claims: the strategies keep each claim to its concept, error is carried forward from a
lower function that fails its own claims, float32 inside float64 is charged once (PREC-3), and the
diagnosis and the printed values tell a learner what happened (spec_tests/harness/carried.py,
strategies.py, diagnosis.py, feedback.py)."""

import numpy as np
import pytest
from hypothesis import given, settings

from spec_tests.harness import carried, check, diagnosis, feedback
from spec_tests.harness import context
from spec_tests.harness.context import CURRENT, current
from spec_tests.harness.loader import load
from spec_tests.harness.strategies import attention_cases, mha_cases
from spec_tests.harness.subject import Subject
from tests.helpers import ROOT

MUTANTS = ROOT / "impls" / "mutants"


def _subject(name: str, dtype: str = "float64") -> Subject:
    return Subject(load(str(MUTANTS / f"{name}.py")), dtype)


@pytest.fixture
def in_a_test():
    token = CURRENT.set(context.TestInfo(nodeid="meta::one_bug", claims=("MHA-5",)))
    yield
    CURRENT.reset(token)


# ------------------------------------------------------------------------------------------ strategies
@settings(max_examples=60, deadline=None)
@given(case=attention_cases())
def test_attention_cases_keep_a_visible_key_in_every_row_and_square_causal(case):
    visible = np.ones(case.scores_shape, dtype=bool)
    if case.mask is not None:
        visible &= np.broadcast_to(case.mask, case.scores_shape)
    if case.is_causal:
        assert case.L_q == case.L_k
        visible &= np.tril(np.ones((case.L_q, case.L_k), dtype=bool))
    assert visible.any(axis=-1).all()


@settings(max_examples=60, deadline=None)
@given(case=mha_cases(masked=None, causal=None))
def test_mha_cases_keep_a_visible_key_in_every_row_and_square_causal(case):
    if case.is_causal:
        assert case.L_q == case.L_k
    if case.mask is not None:
        assert np.broadcast_to(case.mask, (case.B, case.num_heads, case.L_q, case.L_k)).any(axis=-1).all()


@settings(max_examples=80, deadline=None)
@given(case=attention_cases(masked=True, dead_rows=True, causal=True, alignment=True))
def test_the_masks_chapter_can_still_ask_for_dead_rows_and_alignment(case):
    """Drawn at all: over many cases, some have a dead row or L_q != L_k (checked by the strategy's reach)."""
    assert case.mask is not None and case.is_causal


# -------------------------------------------------------------------------------- error carried forward
def test_a_correct_lower_function_fails_no_claim():
    assert carried.lower_verdict(_subject("_base"), "scaled_dot_product_attention") == ()


def test_a_wrong_softmax_axis_fails_sdpa_1_in_the_verdict():
    assert "SDPA-1" in carried.lower_verdict(_subject("softmax_over_query_axis"), "scaled_dot_product_attention")


def test_multi_head_attention_on_a_wrong_sdpa_is_judged_with_it(in_a_test):
    """MHA-5 is met by the reference composition on the implementation's own SDPA, and the note says so."""
    subject = _subject("softmax_over_query_axis")
    rng = np.random.default_rng(0)
    from spec_tests.harness.strategies import mha_weights

    x = rng.standard_normal((2, 3, 4))
    check.oracle(subject, "multi_head_attention", x, x, x, mha_weights(1, 4, True), 2)
    note = carried.note_for(current().nodeid)
    assert "judged with your scaled_dot_product_attention, which fails SDPA-1" in note, note


def test_a_bug_in_multi_head_attention_itself_still_fails(in_a_test):
    subject = _subject("no_output_projection")
    rng = np.random.default_rng(0)
    from spec_tests.harness.strategies import mha_weights

    x = rng.standard_normal((2, 3, 4))
    with pytest.raises(feedback.SpecFailure):
        check.oracle(subject, "multi_head_attention", x, x, x, mha_weights(1, 4, True), 2)


def test_float32_inside_float64_is_judged_at_float32_but_fails_prec_3(in_a_test):
    subject = _subject("computes_in_float32")
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 3))
    check.oracle(subject, "scaled_dot_product_attention", q, k, v)  # MHA-5's context: judged at float32
    assert "float32 precision" in carried.note_for(current().nodeid)
    token = CURRENT.set(context.TestInfo(nodeid="meta::prec3", claims=("PREC-3",)))
    try:
        with pytest.raises(feedback.SpecFailure) as failure:
            check.oracle(subject, "scaled_dot_product_attention", q, k, v)
    finally:
        CURRENT.reset(token)
    assert "exactly a float32" in str(failure.value)


# ------------------------------------------------------------------------------------------- diagnosis
def test_an_ambiguous_minimal_input_is_told_apart_by_further_inputs(in_a_test):
    """L_q=2, L_k=1, causal: the -1e9 fill and an off-by-one causal mask agree there; further inputs decide."""
    subject = _subject("fully_masked_rows_mean_of_v")
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((2, 1)), rng.standard_normal((1, 1)), rng.standard_normal((1, 1))
    with pytest.raises(feedback.SpecFailure) as failure:
        check.oracle(subject, "scaled_dot_product_attention", q, k, v, is_causal=True)
    text = str(failure.value)
    assert "-1e9" in text and "off by one" not in text.lower(), text


def test_precision_failures_print_the_digits_that_differ():
    e = np.array([0.684586123456789])
    s = e.astype(np.float32).astype(np.float64)
    n = feedback.digits_to_tell(e, s)
    assert feedback.fmt_value(e[0], n) != feedback.fmt_value(s[0], n)
    assert "float32" in feedback.precision_note(e, s, "float64")


def test_small_integer_arrays_print_their_values():
    assert "[0, 3, 5]" in feedback.describe(np.array([0, 3, 5]))


def test_the_diagnoser_is_registered():
    assert diagnosis.diagnose in feedback.DIAGNOSERS
