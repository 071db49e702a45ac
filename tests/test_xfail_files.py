"""Per-implementation expected-failure files: they mark, they go stale loudly, they need reasons."""

import pytest

from spec_tests.harness import xfail
from tests.helpers import ROOT, run_suite

MUTANT = ROOT / "impls" / "mutants" / "causal_top_left.py"  # fails MASK-3's bottom-right alignment test
BASE = ROOT / "impls" / "mutants" / "_base.py"


def test_an_expected_failure_is_reported_as_such(tmp_path):
    (tmp_path / "causal_top_left.txt").write_text(
        "test_masks.py::test_causal_is_bottom_right_aligned   # known: top-left alignment\n"
        "test_masks.py::test_no_such_test   # stale line\n")
    code, out, report = run_suite("--impl", str(MUTANT), "--claim", "MASK-3", report=tmp_path / "r.json",
                                  env={"MHA_SPEC_XFAIL_DIR": str(tmp_path)})
    outcomes = {(t["test"], t["dtype"]): t["outcome"] for t in report["tests"]}
    assert outcomes[("test_causal_is_bottom_right_aligned", "float64")] == "expected failure"
    assert outcomes[("test_decoding_with_a_kv_cache_reproduces_causal_attention", "float64")] == "failed"
    assert "matched no test" in out and "test_no_such_test" in out


def test_an_expected_failure_that_passes_fails_the_run(tmp_path):
    (tmp_path / "_base.txt").write_text("test_masks.py::test_causal_is_bottom_right_aligned[float32]  # wrongly listed\n")
    code, out, report = run_suite("--impl", str(BASE), "--claim", "MASK-3", report=tmp_path / "r.json",
                                  env={"MHA_SPEC_XFAIL_DIR": str(tmp_path)})
    assert code == 1
    outcomes = {(t["test"], t["dtype"]): t["outcome"] for t in report["tests"]}
    assert outcomes[("test_causal_is_bottom_right_aligned", "float32")] == "failed"
    assert outcomes[("test_causal_is_bottom_right_aligned", "float64")] == "passed"


def test_a_line_without_a_reason_is_refused(tmp_path):
    bad = tmp_path / "x.txt"
    bad.write_text("test_sdpa.py::test_sdpa_matches_oracle\n")
    with pytest.raises(ValueError, match="needs a reason"):
        xfail.parse(bad)


def test_patterns_match_module_function_and_dtype():
    entries = [xfail.Entry("test_masks.py::*[float16]", "r", "f:1"), xfail.Entry("test_sdpa.py::test_a", "r", "f:2")]
    assert xfail.match(entries, "test_masks.py::test_x[float16]") is entries[0]
    assert xfail.match(entries, "test_masks.py::test_x[float32]") is None
    assert xfail.match(entries, "test_sdpa.py::test_a[float32]") is entries[1]
    assert xfail.match(entries, "test_sdpa.py::test_ab[float32]") is None
