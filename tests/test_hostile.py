"""Hostile submissions (tests/hostile/): grading survives each and scores only honest work.

Every hostile submission is the correct implementation of impls/mutants/_base.py (hostile/_honest.py)
with one misbehaviour, in layer_norm or at import (the ones that use PyTorch need it installed). The rubric (hostile/rubric.toml) grades four
claims a point each: SDPA-1 and MHA-3 never call layer_norm, LN-1 and LN-3 do. So the honest
grade is known exactly: 4 when the misbehaviour costs nothing (a flood of output, a stray child),
2 when layer_norm is broken, 0 when the file cannot even be imported. For each, the meta test
asserts that grade, that grading finished within its limits, that results.json is valid, that no
process of the run is left, and that the suite's files are as they were.
"""

import shutil

import pytest

from tests.grading_helpers import HOSTILE, alive, grade, processes_with, results, worker_pids
from tests.helpers import ROOT

RUBRIC = HOSTILE / "rubric.toml"
LN = ("LN-1", "LN-3")
# name: (honest score out of 4, text the failed layer_norm claims' feedback must show)
CATALOGUE = {
    "control": (4, None),  # the honest part alone, with a correct layer_norm: the 4 points are reachable
    "busy_loop": (2, "of CPU time without returning"),
    "sleep_without_alarm": (2, "without computing or returning"),
    "memory_hog": (2, "MemoryError"),
    "os_exit": (2, "exit code 0"),
    "sys_exit": (2, "raised SystemExit"),
    "keyboard_interrupt": (2, "raised KeyboardInterrupt"),
    "monkeypatch_comparisons": (2, "against the float64 reference"),
    "flood_output": (4, None),
    "child_process": (4, None),
    "import_reference": (2, "which the rubric does not allow"),
    "write_suite_files": (2, "against the float64 reference"),
    "kill_the_grader": (2, "seen shape ()"),
    "import_error": (0, "fails while it is being imported"),
    # Bans hold where the operation runs, whatever name reached it, and the watch cannot be switched off.
    "aten_layer_norm": (2, "which the rubric does not allow"),
    "aten_sdpa": (2, "which the rubric does not allow"),
    "private_variants": (2, "which the rubric does not allow"),
    "pop_the_watch": (2, "tampering with the grader's watch"),
    "syntax_error": (0, "SyntaxError"),
}
MARKERS = ("mha-spec-hostile-child-marker", "mha-spec-hostile-write-marker")
SUITE = [ROOT / "spec_tests", ROOT / "reference", ROOT / "impls", ROOT / "conftest.py", ROOT / "pyproject.toml"]


def _submission(name: str, folder) -> object:
    if name == "control":
        path = folder / "control.py"
        path.write_text("from tests.hostile._honest import *  # noqa: F401,F403\n"
                        "layer_norm = correct_layer_norm  # noqa: F405\n")
        return path
    source = HOSTILE / (f"{name}.txt" if name == "syntax_error" else f"{name}.py")
    path = folder / f"{name}.py"
    shutil.copyfile(source, path)
    return path


def _suite_state() -> dict:
    """Each suite file's mode and whether it holds a hostile marker (other engineers may edit contents)."""
    state = {}
    for top in SUITE:
        for path in ([top] if top.is_file() else top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and "hostile" not in path.parts:
                data = path.read_bytes()
                state[str(path)] = (path.stat().st_mode, any(m.encode() in data for m in MARKERS))
    return state


def test_the_catalogue_is_complete():
    on_disk = {p.stem for p in HOSTILE.iterdir() if p.suffix in (".py", ".txt") and not p.stem.startswith("_")}
    assert on_disk == set(CATALOGUE) - {"control"}, "every hostile submission needs its expected grade here"


TORCH = {"aten_layer_norm", "aten_sdpa", "private_variants", "pop_the_watch"}


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_hostile_submission_gets_exactly_the_honest_grade(name, tmp_path):
    if name in TORCH:
        pytest.importorskip("torch")
    expected, shown = CATALOGUE[name]
    before = _suite_state()
    out = tmp_path / "out"
    code, log = grade(str(_submission(name, tmp_path)), "--out", str(out), "--rubric", str(RUBRIC), timeout=600)
    assert code == 0, f"the grader must finish with status 0 whatever the submission does:\n{log[-3000:]}"
    doc = results(out)
    scores = {t["tags"][1]: t["score"] for t in doc["tests"]}
    assert doc["score"] == expected, f"{name}: graded {doc['score']}, honest work earns {expected}: {scores}"
    if expected == 2:
        assert {c for c, s in scores.items() if s == 0} == set(LN), scores
    assert not doc["extra_data"]["timed_out"], "grading must end within its own time limit"
    feedback = (out / "feedback.md").read_text()
    if shown:
        assert shown in feedback, f"the feedback should say {shown!r}:\n{feedback}"
    if name in ("busy_loop", "sleep_without_alarm"):  # one time-out, then the function is not called again
        assert "does not call it again" in feedback, feedback
    left = [p for p in worker_pids(out) if alive(p)] + [p for m in MARKERS for p in processes_with(m)]
    assert not left, f"processes left running after grading {name}: {left}"
    assert _suite_state() == before, "a hostile submission changed the suite's files"
    assert "flood flood" not in log and len(log) < 20000, "the submission's output reached the grader's"
