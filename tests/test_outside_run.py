"""`pytest --impl ~/hw/attention.py`, with the file outside the repository, is the same run as
`pytest --impl numpy_fast`: the project's rootdir and configuration (markers, `-m "not slow and not meta"`,
report options), only spec_tests/ collected, and test ids that can be pasted back into pytest."""

import textwrap

import pytest

from tests.helpers import ROOT, run_suite

LEARNER = textwrap.dedent('''
    """A learner's file outside the repository: a built-in, with merge_heads forgetting its transpose."""
    import numpy as np

    from impls.numpy_fast import *  # noqa: F401,F403
    from impls.numpy_fast import BACKEND, DTYPES  # noqa: F401


    def merge_heads(heads):
        *batch, H, L, d = heads.shape
        return np.reshape(heads, (*batch, L, H * d))
''')


@pytest.fixture
def outside(tmp_path):
    mine = tmp_path / "hw" / "attention.py"
    mine.parent.mkdir()
    mine.write_text(LEARNER)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return mine, elsewhere


def _collected(out: str) -> list[str]:
    return [line for line in out.splitlines() if "::" in line]


@pytest.mark.parametrize("where", ["the repository root", "a folder outside it"])
def test_an_outside_file_runs_the_project_configuration(outside, where):
    mine, elsewhere = outside
    cwd = ROOT if where == "the repository root" else elsewhere
    code, out, _ = run_suite("--impl", str(mine), "--collect-only", cwd=cwd)
    assert code == 0, out[-3000:]
    ids = _collected(out)  # node ids, relative to the rootdir: the project's
    assert ids and all(i.startswith("spec_tests/test_") for i in ids), ids[:5]
    assert not [i for i in ids if "/meta/" in i or "tests/site" in i or "benchmarks" in i], "not only the spec"
    slow = ("test_heads_specialise_and_two_beat_one_at_equal_d", "test_complexity_table_at_full_size")
    assert not [i for i in ids if i.split("::")[-1].split("[")[0] in slow], "slow tests are not deselected"
    same, out_builtin, _ = run_suite("--impl", "numpy_fast", "--collect-only", cwd=ROOT)
    assert len(ids) == len(_collected(out_builtin)), "not the same tests as --impl numpy_fast"


@pytest.mark.parametrize("where", ["the repository root", "a folder outside it"])
def test_a_failing_id_from_an_outside_run_pastes_back(outside, where):
    """The ids pytest prints (relative to the folder it runs in) run that test again from the same folder."""
    mine, elsewhere = outside
    cwd = ROOT if where == "the repository root" else elsewhere
    code, out, _ = run_suite("--impl", str(mine), "--claim", "MHA-3", cwd=cwd)
    assert code == 1, out[-3000:]
    failed = [line.split()[1] for line in out.splitlines() if line.startswith("FAILED ")]
    assert failed and all("spec_tests/test_multi_head.py::" in f for f in failed), out[-3000:]
    if cwd == ROOT:
        assert all(f.startswith("spec_tests/test_multi_head.py::") for f in failed), failed
    code, again, _ = run_suite(failed[0], "--impl", str(mine), cwd=cwd)
    assert code == 1 and "1 failed" in again, again[-3000:]


def test_a_learners_own_reference_or_grader_module_cannot_stand_in_for_the_suites(tmp_path):
    """`python -m spec_tests check` puts the learner's folder first on sys.path: their `reference.py`, `grader/`
    or `impls/` there must not replace the suite's (spec_tests/harness/packages.py); their other modules import."""
    import subprocess
    import sys

    folder = tmp_path / "hw"
    (folder / "grader").mkdir(parents=True)
    (folder / "grader" / "__init__.py").write_text('raise SystemExit("the learner\'s grader/ was imported")\n')
    for name in ("reference", "impls"):
        (folder / f"{name}.py").write_text(f'raise SystemExit("the learner\'s {name}.py was imported")\n')
    (folder / "helpers_of_mine.py").write_text("import numpy as np\n\ndef centred(x):\n    return x - x.mean(-1, keepdims=True)\n")
    (folder / "mine.py").write_text(textwrap.dedent('''
        import numpy as np
        from helpers_of_mine import centred
        BACKEND = "numpy"

        def layer_norm(x, gamma, beta, eps=1e-5):
            c = centred(x)
            return gamma * c / np.sqrt((c * c).mean(-1, keepdims=True) + eps) + beta
    '''))
    proc = subprocess.run([sys.executable, "-m", "spec_tests", "check", "mine.py", "--claim", "LN-1", "-p",
                           "no:cacheprovider"], cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "CI": "1"})
    out = proc.stdout + proc.stderr
    assert "was imported" not in out, out[-2000:]
    assert proc.returncode == 0, out[-3000:]
    assert "LN-1" in out and "1 passed" in out, out[-2000:]
