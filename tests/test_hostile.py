"""Hostile submissions (tests/hostile/): grading survives each and scores only honest work.

Every hostile submission is the correct implementation of impls/mutants/_base.py (hostile/_honest.py)
with one misbehaviour, in layer_norm or at import (the ones that use PyTorch need it installed). The rubric (hostile/rubric.toml) grades four
claims a point each: SDPA-1 and MHA-3 never call layer_norm, LN-1 and LN-3 do. So the honest
grade is known exactly: 4 when the misbehaviour costs nothing (a flood of output, a stray child),
2 when layer_norm is broken, 0 when the file cannot even be imported. An attack with an honest twin (TWINS: the
same code without the attack, in the catalogue too) must get exactly its twin's grade. For each, the meta test
asserts that grade, that grading finished within its limits, that results.json is valid, that no
process of the run is left, that no process or file of the worker's user is left anywhere (graded as root), and
that the suite's files are as they were.
"""

import glob
import os
import shutil

import pytest

from tests.grading_helpers import (HOSTILE, alive, files_of_user, grade, processes_of_user, processes_with, results,
                                   worker_pids, worker_uid)
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
    # Honest twins: the same code without the attack (each attack below earns no more than its twin's grade).
    "raise_in_layer_norm": (2, "raised RuntimeError"),
    "raise_in_sdpa": (2.6667, "raised RuntimeError"),  # SDPA-1 and MHA-3's test of the heads against it fail
    # A hang costs what a crash costs.
    "hang_in_sdpa": (2.6667, "of CPU time without returning"),
    # Nothing left behind: a disk quota of the worker's own, refused in its own tests; no process, no file stays.
    "fill_disk": (2, "No space left on device"),
    "fill_shm": (2, "No space left on device"),
    "daemon": (4, None),
    # Bans that hold in-process: a result is a plain array, converted under the watch.
    "lazy_output": (2, "not a plain numpy.ndarray"),
    "banned_layer_norm": (2, "which the rubric does not allow"),  # the honest twin of the attacks on the watch
    "frame_walk": (2, "which the rubric does not allow"),  # the watch put back, its F.layer_norm seen
    "patch_reporting": (2, "which the rubric does not allow"),
    # The answer key run from its source text, after detecting the grader: its code is banned by what it is.
    "run_the_reference_source": (2, "run from its source text"),
}
# attack -> its honest twin: the same code without the attack, graded beside it to exactly the same score
TWINS = {"hang_in_sdpa": "raise_in_sdpa", "busy_loop": "raise_in_layer_norm",
         "sleep_without_alarm": "raise_in_layer_norm", "fill_disk": "raise_in_layer_norm",
         "fill_shm": "raise_in_layer_norm", "daemon": "control", "lazy_output": "raise_in_layer_norm",
         "frame_walk": "banned_layer_norm", "patch_reporting": "banned_layer_norm",
         "run_the_reference_source": "raise_in_layer_norm"}
ROOT_ONLY = {"fill_disk", "fill_shm"}
# attacks on the grader's own objects: marked for review in results.json, the gradebook's status and the log
TAMPERS = {"pop_the_watch", "frame_walk", "patch_reporting", "run_the_reference_source", "write_suite_files"}  # without root there is no quota of the worker's own to refuse them
MARKERS = ("mha-spec-hostile-child-marker", "mha-spec-hostile-write-marker", "mha-spec-hostile-daemon-marker")
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


TORCH = {"aten_layer_norm", "aten_sdpa", "private_variants", "pop_the_watch", "lazy_output", "banned_layer_norm",
         "frame_walk", "patch_reporting"}


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_hostile_submission_gets_exactly_the_honest_grade(name, tmp_path):
    if name in TORCH:
        pytest.importorskip("torch")
    if name in ROOT_ONLY and os.geteuid() != 0:
        pytest.skip("the worker's own disk quota needs the grader to run as root")
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
    if name in TAMPERS:
        assert doc["extra_data"]["review"] and doc["extra_data"]["status"] == "review: tampering", doc["extra_data"]
        assert "REVIEW: the submission tampered with the grader" in (out / "grading.log").read_text()
    else:
        assert not doc["extra_data"]["review"], f"{name} marked for review: {doc['extra_data']['review']}"
    if name in TWINS:
        twin = CATALOGUE[TWINS[name]][0]
        assert doc["score"] == twin, f"{name} graded {doc['score']}, its honest twin {TWINS[name]} {twin}"
    assert not doc["extra_data"]["timed_out"], "grading must end within its own time limit"
    feedback = (out / "feedback.md").read_text()
    if shown:
        assert shown in feedback, f"the feedback should say {shown!r}:\n{feedback}"
    if name in ("busy_loop", "sleep_without_alarm"):  # one time-out, then the function is not called again
        assert "does not call it again" in feedback, feedback
    left = [p for p in worker_pids(out) if alive(p)] + [p for m in MARKERS for p in processes_with(m)]
    assert not left, f"processes left running after grading {name}: {left}"
    assert _suite_state() == before, "a hostile submission changed the suite's files"
    uid = worker_uid(out)
    if uid is not None:  # graded as root: nothing of the worker's user remains, running or on disk
        assert not processes_of_user(uid), f"processes of the worker's user {uid} left after grading {name}"
        assert not files_of_user(uid), f"files of the worker's user {uid} left after grading {name}: " \
                                       f"{files_of_user(uid)[:5]}"
    assert not [p for top in ("/tmp", "/var/tmp", "/dev/shm") for p in glob.glob(f"{top}/mha-spec-hostile-*")], \
        "a hostile submission's files were left behind"
    assert "flood flood" not in log and len(log) < 20000, "the submission's output reached the grader's"
