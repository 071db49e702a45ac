"""A fault of the grader is never a grade: a broken suite gives exit status 3 and no score."""

import json
import os
import shutil
import subprocess
import sys

from grader import run as run_mod
from spec_tests.sandbox import limits
from tests.grading_helpers import HOSTILE
from tests.helpers import ROOT

COPIED = ("spec_tests", "grader", "tests", "reference", "impls", "conftest.py", "pyproject.toml")


def _broken_copy(tmp_path):
    """This repository's suite, copied, with one chapter module that cannot be imported."""
    copy = tmp_path / "suite"
    copy.mkdir()
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, copy / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copyfile(src, copy / name)
    module = copy / "spec_tests" / "test_layer_norm.py"
    module.write_text("import a_module_that_does_not_exist_anywhere  # broken on purpose\n" + module.read_text())
    return copy


def test_a_suite_that_fails_to_collect_gives_status_3_and_no_score(tmp_path):
    copy = _broken_copy(tmp_path)
    submission = tmp_path / "control.py"
    submission.write_text("from tests.hostile._honest import *  # noqa: F401,F403\n"
                          "layer_norm = correct_layer_norm  # noqa: F405\n")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("MHA_SPEC_IMPL", "CI")}
    env["PYTHONPATH"] = str(copy)
    proc = subprocess.run([sys.executable, "-m", "spec_tests.grade", str(submission), "--out", str(out),
                           "--rubric", str(HOSTILE / "rubric.toml")], cwd=copy, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 3, f"a broken suite must give status 3, got {proc.returncode}:\n{proc.stderr[-3000:]}"
    doc = json.loads((out / "results.json").read_text())
    assert "score" not in doc and doc["tests"] == [], f"a fault of the grader must not give a score: {doc}"
    assert "autograder failed" in doc["output"] and "not a score" in doc["output"], doc["output"]
    assert "a_module_that_does_not_exist_anywhere" in doc["extra_data"]["autograder_fault"], doc["extra_data"]


def test_parallel_runs_are_sized_by_the_container():
    mb = 2**20
    assert run_mod.parts_for(1, limits.Container(cpus=0.5, memory_bytes=768 * mb)) == 1
    assert run_mod.parts_for(1, limits.Container(cpus=8, memory_bytes=None)) == 4
    assert run_mod.parts_for(1, limits.Container(cpus=4, memory_bytes=1536 * mb)) == 2
    assert run_mod.parts_for(2, limits.Container(cpus=4, memory_bytes=None)) == 2


def test_the_container_is_read_from_this_process_cgroup():
    c = limits.container()
    assert 0 < c.cpus <= (os.cpu_count() or 1)
    assert c.memory_bytes is None or c.memory_bytes > 0
    assert c.oom_kills() >= 0
