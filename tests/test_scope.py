"""Declared scope (spec_tests/harness/scope.py) and "not implemented" decided by what was asked
(spec_tests/harness/subject.py): tiny implementations written here, run through the whole plugin."""

import textwrap

from tests.helpers import run_suite

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


def test_every_input_out_of_scope_is_out_of_scope_not_a_failure(tmp_path):
    """A function that declares every input out of scope: its claims are "out of scope", with the reason;
    no failure, no Hypothesis "Unsatisfiable", and the run is not red on their account."""
    mine = _module(tmp_path, "nothing_in_scope", '''
        def attention_weights(q, k, mask=None, is_causal=False, scale=None):
            raise OutOfScope("this library returns no attention weights")

        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            raise OutOfScope("this library returns no attention weights")
    ''')
    code, out, report = run_suite("--impl", str(mine), "--claim", "SDPA-2", report=tmp_path / "r.json")
    assert code == 0, out[-3000:]
    assert report["claims"]["SDPA-2"]["nothing_in_scope"] == "out of scope"
    tests = _outcomes(report, "SDPA-2")
    assert tests and {t["outcome"] for t in tests} <= {"out of scope", "not applicable"}, tests
    assert any("this library returns no attention weights" in t["message"] for t in tests)
    assert "Unsatisfiable" not in out and "filters less strict" not in out
    assert "scope" in out and "test(s) out of scope" in out  # the summary's cell and its line


def test_some_inputs_out_of_scope_the_rest_are_judged(tmp_path):
    """Cross-attention out of scope: the self-attention examples still pass, and a bug on them still fails."""
    fine = _module(tmp_path, "self_only", '''
        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            if q.shape[-2] != k.shape[-2]:
                raise OutOfScope("self-attention only: L_q must equal L_k")
            return _fast.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, scale=scale)
    ''')
    code, out, report = run_suite("--impl", str(fine), "--claim", "SDPA-1", report=tmp_path / "r.json")
    assert code == 0, out[-3000:]
    assert report["claims"]["SDPA-1"]["self_only"] == "passed"
    assert any("out of scope: self-attention only" in t["message"] for t in _outcomes(report, "SDPA-1"))

    buggy = _module(tmp_path, "self_only_unscaled", '''
        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            if q.shape[-2] != k.shape[-2]:
                raise OutOfScope("self-attention only: L_q must equal L_k")
            return _fast.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, scale=1.0)
    ''')
    code, out, report = run_suite("--impl", str(buggy), "--claim", "SDPA-1", report=tmp_path / "r2.json")
    assert code == 1, out[-3000:]
    assert report["claims"]["SDPA-1"]["self_only_unscaled"] == "failed"


def test_a_test_without_hypothesis_is_out_of_scope_at_once(tmp_path):
    """MHA-2's bad-input tests are plain tests: an input declared out of scope is reported so, not as a
    missing ValueError."""
    mine = _module(tmp_path, "mha_out", '''
        def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, **kw):
            raise OutOfScope("no multi-head attention in this library")
    ''')
    code, out, report = run_suite("--impl", str(mine), "--claim", "MHA-2", report=tmp_path / "r.json")
    assert code == 0, out[-3000:]
    raising = [t for t in _outcomes(report, "MHA-2") if t["test"] == "test_d_model_not_divisible_by_heads_raises"]
    assert raising and {t["outcome"] for t in raising} == {"out of scope"}, raising
    assert all("no multi-head attention in this library" in t["message"] for t in raising)
    assert report["claims"]["MHA-2"]["mha_out"] == "passed"  # its split_heads test is judged as usual


def test_not_implemented_for_one_kind_of_input_decides_that_test_only(tmp_path):
    """NotImplementedError for masks: the tests with a mask fail as "not implemented" with the message, the
    others still run and pass (the function is not marked unwritten for the session); the run is red."""
    mine = _module(tmp_path, "no_masks", '''
        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            if mask is not None:
                raise NotImplementedError("boolean masks are not supported by this kernel")
            return _fast.scaled_dot_product_attention(q, k, v, is_causal=is_causal, scale=scale)
    ''')
    code, out, report = run_suite("--impl", str(mine), "--claim", "MASK-1,SDPA-1", report=tmp_path / "r.json")
    assert code == 1, out[-3000:]
    assert report["claims"]["SDPA-1"]["no_masks"] == "passed", report["claims"]
    masked = [t for t in _outcomes(report, "MASK-1") if t["outcome"] == "not implemented"]
    assert masked and all("boolean masks are not supported" in t["message"] for t in masked), masked[:2]
    assert all("this input only" in t["message"] for t in masked)


def test_not_implemented_in_the_plain_case_is_the_whole_function(tmp_path):
    """The template's way: NotImplementedError for every input, so for the plain case: every test of the
    function is "not implemented" and the run is red."""
    mine = _module(tmp_path, "unwritten", '''
        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            raise NotImplementedError("scaled_dot_product_attention: not written yet")
    ''')
    code, out, report = run_suite("--impl", str(mine), "--claim", "SDPA-1,SDPA-4", report=tmp_path / "r.json")
    assert code == 1, out[-3000:]
    assert report["claims"]["SDPA-1"]["unwritten"] == report["claims"]["SDPA-4"]["unwritten"] == "not implemented"
