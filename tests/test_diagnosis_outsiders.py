"""The likely-cause line names a known bug only when it is the one, on bugs written elsewhere.

Each outsider (tests/diagnosis_outsiders.py) is a from-scratch NumPy implementation with one bug, judged
on small failing inputs like those a shrinker reaches. The diagnosis may name one of the known bugs that
are the same bug, or none; it must never name another. The issue's three confident wrong names are
pinned: a chunked kernel that skips its diagonal block (not "j < i"), attention weights that ignore
is_causal (not "j <= i + 1"), a scale taken from d_v (not "no scaling").
"""

import numpy as np
import pytest

from spec_tests.harness import check, context, diagnosis, feedback
from spec_tests.harness.context import CURRENT
from tests import diagnosis_outsiders as outsiders

CASES = [(name, o) for name, variants in outsiders.OUTSIDERS.items() for o in variants]


@pytest.fixture(autouse=True)
def _no_snippet(monkeypatch):
    monkeypatch.setenv("MHA_SPEC_NO_REPRO", "1")
    diagnosis.NAMED.clear()
    yield
    diagnosis.NAMED.clear()


def test_there_are_fifteen_outsiders_at_least():
    assert len(outsiders.OUTSIDERS) >= 15


@pytest.mark.parametrize("name,outsider", CASES, ids=[f"{n}-{o.fname}" for n, o in CASES])
def test_the_named_cause_is_right_or_absent(name, outsider):
    lines = outsiders.causes_for(name, outsider)
    assert any(text != "passed" for _, text in lines), f"{name}: no case fails, so nothing is diagnosed"
    wrong = [(c, t) for c, t in lines if outsiders.named(t) not in (None, *outsider.right)]
    assert not wrong, f"{name} ({outsider.fname}) was given a wrong cause: {wrong}"


def _message(name, fname, fn, args, kwargs, claim="MASK-2") -> str:
    subj = outsiders.subject(name, fname, fn)
    token = CURRENT.set(context.TestInfo(nodeid=f"meta::{name}", claims=(claim,)))
    try:
        with pytest.raises(feedback.SpecFailure) as failure:
            check.oracle(subj, fname, *args, **kwargs)
        return str(failure.value)
    finally:
        CURRENT.reset(token)


@pytest.mark.parametrize("name,fname,fn,args,kwargs,claim", [
    ("chunked", "scaled_dot_product_attention", outsiders.chunked_skips_block_early, outsiders.qkv(1, 1),
     {"is_causal": True}, "MASK-2"),
    ("no_causal", "attention_weights", outsiders.weights_ignore_causal, outsiders.qkv(2, 2, with_v=False),
     {"is_causal": True}, "MASK-2"),
])
def test_the_issues_look_alikes_get_no_name_and_a_description(name, fname, fn, args, kwargs, claim):
    text = _message(name, fname, fn, args, kwargs, claim)
    assert "likely cause" not in text, text
    assert "looks like: " in text and "further inputs rule it out, so no cause is named" in text, text


def test_a_scale_taken_from_d_v_is_named_as_such_not_as_a_missing_scale():
    """On d_v = 1 a scale from d_v is no scale at all, like no_score_scaling; the further inputs (d_v != d_k) name
    the known bug that takes it from d_v (impls/mutants/scale_from_d_v.py), and only it."""
    text = _message("scale_d_v", "scaled_dot_product_attention", outsiders.sdpa_scale_from_d_v,
                    outsiders.qkv(1, 2, 2, 1), {}, "SDPA-4")
    assert "likely cause: this matches a known bug: taking the default scale from the values' width" in text, text
    assert "forgetting the 1/sqrt(d_k) scaling" not in text, text


def test_a_constant_factor_is_described_with_its_ratio():
    """The scale after the softmax with one key: every output is 1/sqrt(d_k) = 1/sqrt(2) times the expected one."""
    q, k, v = outsiders.qkv(2, 1, 2, 3)
    text = _message("after", "scaled_dot_product_attention", outsiders.sdpa_scale_after_softmax, (q, k, v), {},
                    "SDPA-1")
    if "likely cause" not in text:
        assert "0.707107 times the expected one" in text, text


def test_one_bug_is_one_cause_across_claims():
    """The same bug failing a second claim: the line says it is the bug already named, not another."""
    fn = outsiders.weights_over_queries
    first = _message("one", "attention_weights", fn, outsiders.qkv(2, 1, with_v=False), {}, "SDPA-2")
    second = _message("one", "attention_weights", fn, outsiders.qkv(3, 2, 2, 2, seed=4, with_v=False), {}, "SDPA-1")
    assert "this matches a known bug: taking the softmax over the query axis" in first, first
    assert "the known bug already named for SDPA-2 explains this failure too: taking the softmax" in second, second


def test_the_grader_counts_a_bug_named_twice_as_one_cause():
    from grader.feedback import classify

    bug = "taking the softmax over the query axis (axis=-2) instead of over the keys (axis=-1)"
    named = {"outcome": "failed", "message": f"SDPA-2 does not hold\n  likely cause: this matches a known bug: {bug}"}
    again = {"outcome": "failed", "message": "SDPA-1 does not hold\n  likely cause: the known bug already named for "
                                             f"SDPA-2 explains this failure too: {bug}"}
    assert classify(named)[0] == classify(again)[0] == ("known bug", bug)


# ------------------------------------------------------------------------------------ precision notes
def test_no_precision_note_for_zeros_or_huge_errors():
    assert feedback.precision_note(np.array([[1e-300]]), np.array([[0.0]]), "float64") is None
    assert feedback.precision_note(np.array([[0.3, 0.2]]), np.array([[0.0, 0.0]]), "float64") is None
    e = np.array([0.25, -0.5])  # exact in every dtype: they do not say which one ran
    assert "exactly" not in (feedback.precision_note(e * (1 + 1e-7), e, "float64") or "")


def test_no_precision_note_naming_a_dtype_the_run_did_not_use():
    e = np.array([0.684586123456789, 0.3123456789])
    for low in ("float16", "bfloat16"):
        assert feedback.precision_note(e, e * (1 + 2e-3), low) is None


def test_a_float32_note_when_the_values_are_float32_and_the_error_its_size():
    e = np.array([0.684586123456789, 0.3123456789])
    s = e.astype(np.float32).astype(np.float64)
    assert "exactly a float32" in feedback.precision_note(e, s, "float64")
    assert feedback.precision_note(e, s * 1.5, "float64") is None  # a wrong value is not a precision
