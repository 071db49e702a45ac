"""Declared scope (spec_tests/harness/scope.py) and "not implemented" decided by what was asked
(spec_tests/harness/subject.py): tiny implementations written here, run through the whole plugin, each
both in-process and through the confined worker (`--isolate`, what the grader uses: the worker carries
OutOfScope and NotImplementedError back as the same exceptions), which must give the same verdicts."""

import functools
import shutil
import textwrap

import pytest

from tests.grading_helpers import grade, results
from tests.helpers import ROOT, run_suite

MODES = {"in-process": (), "isolated": ("--isolate",)}


@pytest.fixture(params=list(MODES))
def suite(request):
    """run_suite, in-process or through the worker."""
    return functools.partial(run_suite, *MODES[request.param])

NUMPY_ALL = '''
    from impls.numpy_fast import *  # noqa: F401,F403
    from impls.numpy_fast import BACKEND, DTYPES  # noqa: F401
    import impls.numpy_fast as _fast
    from spec_tests import OutOfScope
'''


def _module(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(NUMPY_ALL) + textwrap.dedent(body))
    return path


def _outcomes(report, claim):
    return [t for t in report["tests"] if claim in t["claims"]]


def test_every_input_out_of_scope_is_out_of_scope_not_a_failure(tmp_path, suite):
    """A function that declares every input out of scope: its claims are "out of scope", with the reason;
    no failure, no Hypothesis "Unsatisfiable", and the run is not red on their account."""
    mine = _module(tmp_path, "nothing_in_scope", '''
        def attention_weights(q, k, mask=None, is_causal=False, scale=None):
            raise OutOfScope("this library returns no attention weights")

        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            raise OutOfScope("this library returns no attention weights")
    ''')
    code, out, report = suite("--impl", str(mine), "--claim", "SDPA-2", report=tmp_path / "r.json")
    assert code == 0, out[-3000:]
    assert report["claims"]["SDPA-2"]["nothing_in_scope"] == "out of scope"
    tests = _outcomes(report, "SDPA-2")
    assert tests and {t["outcome"] for t in tests} <= {"out of scope", "not applicable"}, tests
    assert any("this library returns no attention weights" in t["message"] for t in tests)
    assert "Unsatisfiable" not in out and "filters less strict" not in out
    assert "scope" in out and "test(s) out of scope" in out  # the summary's cell and its line


def test_some_inputs_out_of_scope_the_rest_are_judged(tmp_path, suite):
    """Cross-attention out of scope: the self-attention examples still pass, and a bug on them still fails."""
    fine = _module(tmp_path, "self_only", '''
        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            if q.shape[-2] != k.shape[-2]:
                raise OutOfScope("self-attention only: L_q must equal L_k")
            return _fast.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, scale=scale)
    ''')
    code, out, report = suite("--impl", str(fine), "--claim", "SDPA-1", report=tmp_path / "r.json")
    assert code == 0, out[-3000:]
    assert report["claims"]["SDPA-1"]["self_only"] == "passed"
    assert any("out of scope: self-attention only" in t["message"] for t in _outcomes(report, "SDPA-1"))

    buggy = _module(tmp_path, "self_only_unscaled", '''
        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            if q.shape[-2] != k.shape[-2]:
                raise OutOfScope("self-attention only: L_q must equal L_k")
            return _fast.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, scale=1.0)
    ''')
    code, out, report = suite("--impl", str(buggy), "--claim", "SDPA-1", report=tmp_path / "r2.json")
    assert code == 1, out[-3000:]
    assert report["claims"]["SDPA-1"]["self_only_unscaled"] == "failed"


def test_a_test_without_hypothesis_is_out_of_scope_at_once(tmp_path, suite):
    """MHA-2's bad-input tests are plain tests: an input declared out of scope is reported so, not as a
    missing ValueError."""
    mine = _module(tmp_path, "mha_out", '''
        def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, **kw):
            raise OutOfScope("no multi-head attention in this library")
    ''')
    code, out, report = suite("--impl", str(mine), "--claim", "MHA-2", report=tmp_path / "r.json")
    assert code == 0, out[-3000:]
    raising = [t for t in _outcomes(report, "MHA-2") if t["test"] == "test_d_model_not_divisible_by_heads_raises"]
    assert raising and {t["outcome"] for t in raising} == {"out of scope"}, raising
    assert all("no multi-head attention in this library" in t["message"] for t in raising)
    assert report["claims"]["MHA-2"]["mha_out"] == "passed"  # its split_heads test is judged as usual


def test_not_implemented_for_one_kind_of_input_decides_that_test_only(tmp_path, suite):
    """NotImplementedError for masks: the tests with a mask fail as "not implemented" with the message, the
    others still run and pass (the function is not marked unwritten for the session); the run is red."""
    mine = _module(tmp_path, "no_masks", '''
        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            if mask is not None:
                raise NotImplementedError("boolean masks are not supported by this kernel")
            return _fast.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=scale)
    ''')
    code, out, report = suite("--impl", str(mine), "--claim", "MASK-1,SDPA-1", report=tmp_path / "r.json")
    assert code == 1, out[-3000:]
    assert report["claims"]["SDPA-1"]["no_masks"] == "passed", report["claims"]
    masked = [t for t in _outcomes(report, "MASK-1") if t["outcome"] == "not implemented"]
    assert masked and all("boolean masks are not supported" in t["message"] for t in masked), masked[:2]
    assert all("this input only" in t["message"] for t in masked)


def test_not_implemented_in_the_plain_case_is_the_whole_function(tmp_path, suite):
    """The template's way: NotImplementedError for every input, so for the plain case: every test of the
    function is "not implemented" and the run is red."""
    mine = _module(tmp_path, "unwritten", '''
        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            raise NotImplementedError("scaled_dot_product_attention: not written yet")
    ''')
    code, out, report = suite("--impl", str(mine), "--claim", "SDPA-1,SDPA-4", report=tmp_path / "r.json")
    assert code == 1, out[-3000:]
    assert report["claims"]["SDPA-1"]["unwritten"] == report["claims"]["SDPA-4"]["unwritten"] == "not implemented"


def test_not_implemented_for_a_backward_pass_leaves_the_forward_claims_judged(tmp_path, suite):
    """FlexAttention's case: NotImplementedError for inputs that require grad (a native call, MASK-2's gradient
    test) fails that test only; the forward tests of the same function still pass."""
    mine = tmp_path / "no_backward.py"
    mine.write_text(textwrap.dedent('''
        import torch
        from impls.torch_naive import *  # noqa: F401,F403
        import impls.torch_naive as _naive

        BACKEND, DTYPES = "torch", ("float64",)

        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            if any(x.requires_grad for x in (q, k, v)):
                raise NotImplementedError("no backward pass on the CPU")
            return _naive.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, scale=scale)
    '''))
    code, out, report = suite("--impl", str(mine), "--claim", "MASK-2", report=tmp_path / "r.json")
    tests = _outcomes(report, "MASK-2")
    backward = [t for t in tests if t["outcome"] == "not implemented"]
    assert backward and all("no backward pass on the CPU" in t["message"] and "this input only" in t["message"]
                            for t in backward), backward
    assert any(t["outcome"] == "passed" for t in tests), [(t["test"], t["outcome"]) for t in tests]


@pytest.mark.parametrize("condition, points", [("q.shape[-2] != k.shape[-2]", 1), ("True", 0)],
                         ids=["cross-attention-out", "everything-out"])
def test_an_out_of_scope_example_costs_no_point_and_earns_none_when_grading(condition, points, tmp_path):
    """The grader (always through the worker): a correct submission that declares cross-attention out of scope
    gets SDPA-1's point, its self-attention examples judged and passed; one that declares every input out of
    scope earns nothing for it (a declaration never scores a claim), shown as "out of scope"."""
    sub = tmp_path / "attention.py"
    shutil.copyfile(ROOT / "impls" / "mutants" / "_base.py", sub)
    sub.write_text(sub.read_text() + textwrap.dedent(f'''

        import functools as _functools
        from spec_tests import OutOfScope as _OutOfScope

        _all_lengths = scaled_dot_product_attention


        @_functools.wraps(_all_lengths)
        def scaled_dot_product_attention(q, k, v, *args, **kwargs):
            if {condition}:
                raise _OutOfScope("self-attention only: L_q must equal L_k")
            return _all_lengths(q, k, v, *args, **kwargs)
    '''))
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('[grading]\ntotal_timeout = 600\n[claims."SDPA-1"]\npoints = 1\n')
    out = tmp_path / "out"
    code, log = grade(str(sub), "--out", str(out), "--rubric", str(rubric))
    assert code == 0, log[-3000:]
    graded = {t["tags"][1]: t for t in results(out)["tests"]}
    assert graded["SDPA-1"]["score"] == points, (graded["SDPA-1"], log[-3000:])
    if not points:
        assert "SDPA-1" in (out / "feedback.md").read_text() and "out of scope" in graded["SDPA-1"]["output"]
