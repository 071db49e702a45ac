"""Failure messages: the claim, the input, expected against seen, a snippet that really reproduces it, the chapter."""

import subprocess
import sys
import textwrap

from tests.helpers import ROOT, run_suite

MUTANTS = ROOT / "impls" / "mutants"


def _snippet(output: str) -> str:
    """The indented block after 'reproduce (paste into Python):' in a failure message."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if "reproduce (paste into Python):" in line) + 1
    block = []
    for line in lines[start:]:
        if line.strip().startswith("read: "):
            break
        block.append(line)
    return textwrap.dedent("\n".join(block))


def _failure_output(mutant: str, claim: str) -> str:
    code, out, _ = run_suite("--impl", str(MUTANTS / f"{mutant}.py"), "--claim", claim, "-x",
                             env={"MHA_SPEC_NO_REPRO": ""})
    assert code == 1, out[-2000:]
    return out


def test_a_failure_names_claim_input_values_and_chapter():
    out = _failure_output("no_score_scaling", "SDPA-1")
    assert "SDPA-1 does not hold: softmax(QK^T/sqrt(d_k)) V equals the float64 reference" in out
    assert "implementation: no_score_scaling (numpy, float64)" in out
    assert "input: scaled_dot_product_attention(" in out
    assert "expected:" in out and "seen:" in out and "largest error" in out and "allowed" in out
    assert "read: docs/sdpa.md#sdpa-1" in out
    assert "Traceback" not in out  # the suite's own frames stay out of the learner's way


def test_the_reproduction_snippet_runs_and_shows_the_bug(tmp_path):
    """Paste the snippet into Python: it loads the implementation, rebuilds the input, and out != expected."""
    for mutant, claim in (("no_score_scaling", "SDPA-1"), ("causal_top_left", "MASK-3")):
        snippet = _snippet(_failure_output(mutant, claim))
        script = snippet + "\nimport numpy as _np\nprint('LARGEST', float(_np.abs(_np.asarray(out, dtype=float) - expected).max()))\n"
        proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{mutant}: the snippet does not run:\n{snippet}\n{proc.stderr[-2000:]}"
        largest = float(proc.stdout.split("LARGEST")[-1])
        assert largest > 1e-6, f"{mutant}: the snippet does not reproduce the failure ({largest})\n{snippet}"


def test_an_exception_on_valid_input_is_a_claim_failure_with_feedback(tmp_path):
    """An implementation that raises on input the contract calls valid fails the claim with the whole
    feedback (claim, input, the exception, snippet, chapter), not a traceback from inside the suite."""
    mine = tmp_path / "raises.py"
    mine.write_text(textwrap.dedent('''
        from impls.mutants._base import *  # noqa: F401,F403

        def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
            raise RuntimeError("not for these shapes")
    '''))
    code, out, _ = run_suite("--impl", str(mine), "--claim", "SDPA-1", "-x", env={"MHA_SPEC_NO_REPRO": ""})
    assert code == 1, out[-2000:]
    assert "SDPA-1 does not hold" in out
    assert "check: scaled_dot_product_attention on valid input returns a result" in out
    assert "input: scaled_dot_product_attention(" in out
    assert "raised RuntimeError: not for these shapes" in out
    assert "reproduce (paste into Python):" in out and "read: docs/sdpa.md#sdpa-1" in out
    assert "Traceback" not in out


def test_a_long_message_is_cut_at_lines_and_keeps_its_likely_cause():
    """A message over the report's limit keeps its start and its end, whole lines, and the largest-error,
    likely-cause and looks-like lines from the part left out (the grader groups failures by them: a cut line made
    one bug three causes)."""
    from spec_tests.harness.outcomes import shorten

    lines = [f"seen row {i}: " + "0.123456 " * 8 for i in range(120)]
    lines[40] = "likely cause: this matches a known bug: forgetting the 1/sqrt(d_k) scaling"
    lines[39] = "largest error 0.476 (relative 0.278) at index (0, 1) (expected -1.71088, seen -2.18694)"
    looks = ("looks like: every value is 0.937063 times the expected one (one constant factor) (more than one known "
             "bug explains it alike, even on further inputs, so none is named)")
    lines[41] = looks  # a multi-head input's snippet is long: the grader's feedback lost this line
    cut = shorten("\n".join(lines))
    assert len(cut) < 4000 + len(lines[39]) + len(lines[40]) + len(looks) + 10 and "\n...\n" in cut
    kept = cut.splitlines()
    assert "likely cause: this matches a known bug: forgetting the 1/sqrt(d_k) scaling" in kept
    assert lines[39] in kept and looks in kept
    assert all(line in lines or line == "..." for line in kept), "only whole lines are kept"
    assert kept[0] == lines[0] and kept[-1] == lines[-1]
