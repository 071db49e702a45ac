"""The commands a learner runs: the template run, a file outside the repository, the wrapper."""

import ast
import os
import subprocess
import sys
import textwrap

from spec_tests.harness import claims
from tests.helpers import ROOT, run_suite

CORE = {"sdpa", "multi_head", "masks", "variable_length", "layer_norm", "positional", "errors"}


def test_untouched_template_reports_every_claim_not_implemented(tmp_path):
    """The template: every claim 'not implemented', a non-zero exit, and no error from the suite itself."""
    code, out, report = run_suite("--impl", "template", report=tmp_path / "r.json")
    assert code == 1, f"expected pytest's 'tests failed' exit code 1, got {code}\n{out[-3000:]}"
    assert " error" not in out.splitlines()[-1], f"the suite itself errored:\n{out[-3000:]}"
    statuses = report["claims"]
    core_claims = {c.id for c in claims.catalogue().values() if c.chapter in CORE and not c.demonstration}
    assert core_claims <= set(statuses), "claims missing from the summary"
    # per implementation; "" collects the tests that call no implementation (the oracle's own checks, e.g. of its KV cache)
    wrong = {cid: s for cid, per in statuses.items() for impl, s in per.items()
             if impl and s not in ("not implemented", "not applicable")}
    assert not wrong, f"claims not reported as not implemented: {wrong}"
    assert "not implemented:" in out and "Traceback" not in out


def test_a_file_outside_the_repository_is_checked_from_the_root(tmp_path):
    """`pytest --impl ~/hw/attention.py`, a space and a path outside the repo, from the repository root."""
    mine = tmp_path / "hw" / "attention.py"
    mine.parent.mkdir()
    mine.write_text(textwrap.dedent('''
        """A learner's file: here it simply reuses a built-in implementation."""
        from impls.numpy_fast import *  # noqa: F401,F403
        from impls.numpy_fast import BACKEND, DTYPES  # noqa: F401
    '''))
    code, out, report = run_suite("--impl", str(mine), "--claim", "SDPA-1,MASK-4", report=tmp_path / "r.json")
    assert code == 0, out[-3000:]
    assert set(report["implementations"]) == {"attention"}
    assert report["claims"]["SDPA-1"]["attention"] == "passed"


def test_python_m_spec_tests_check(tmp_path):
    mine = tmp_path / "mine.py"
    mine.write_text("from impls.reference import *  # noqa: F401,F403\nBACKEND = 'numpy'\nDTYPES = ('float64',)\n")
    proc = subprocess.run([sys.executable, "-m", "spec_tests", "check", str(mine), "--claim", "MHA-3", "-q"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "CI": "1", "MHA_SPEC_MEASUREMENTS": ""})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "MHA-3" in proc.stdout and "pass" in proc.stdout


def test_a_learner_file_that_does_not_import_gets_a_clear_message(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("BACKEND = 'numpy'\ndef scaled_dot_product_attention(q, k, v:\n    pass\n")
    code, out, _ = run_suite("--impl", str(broken))
    assert code == 4, out[-2000:]  # pytest's usage-error exit code
    assert "could not load the implementation" in out and "SyntaxError" in out


def _imported_after(*args: str) -> tuple[int, set[str]]:
    """Run pytest in a fresh process with ARGS; return its exit code and which of the suite's own test
    modules and PyTorch it imported."""
    probe = ("import sys, pytest\n"
             f"code = pytest.main({list(args)!r} + ['-q', '-p', 'no:cacheprovider'])\n"
             "print('IMPORTED', sorted(m for m in sys.modules if m.startswith('tests.') or m == 'torch'))\n"
             "sys.exit(code)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MHA_SPEC_IMPL", "MHA_SPEC_MEASUREMENTS")}
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(env, CI="1", MHA_SPEC_NO_REPRO="1"))
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("IMPORTED ")]
    assert line, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.returncode, set(ast.literal_eval(line[-1][len("IMPORTED "):]))


def test_checking_a_numpy_file_imports_neither_the_suites_own_tests_nor_torch():
    """A learner's NumPy run pays for neither: the suite's own tests cannot be selected by it, and
    nothing it runs needs PyTorch."""
    code, imported = _imported_after("--impl", "numpy_fast", "--claim", "SDPA-1")
    assert code == 0 and not imported, f"exit {code}; imported {sorted(imported)}"


def test_the_default_run_never_collects_the_suites_own_tests():
    """`pytest` runs the specification (testpaths), not the suite's own tests, with no marker logic."""
    code, imported = _imported_after("--collect-only", "--impl", "template")
    assert code == 0 and not {m for m in imported if m.startswith("tests.")}, f"exit {code}; imported {sorted(imported)}"


def test_the_suites_own_tests_are_collected_when_asked_for():
    code, imported = _imported_after("--collect-only", "tests/test_shape_names.py")
    assert code == 0 and "tests.test_shape_names" in imported, f"exit {code}; imported {sorted(imported)}"
