"""Running the grader as an instructor would (`python -m spec_tests.grade`), and checking what it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from spec_tests.meta.helpers import ROOT

HOSTILE = ROOT / "spec_tests" / "meta" / "hostile"
RESULT_KEYS = {"score", "execution_time", "output", "visibility", "tests"}
TEST_KEYS = {"name", "score", "max_score", "status", "output", "visibility", "tags"}
VISIBILITY = {"visible", "hidden", "after_due_date", "after_published"}


def grade(*args: str, timeout: int = 900, cwd: Path | None = None):
    """Run the grader; return (exit code, its output)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MHA_SPEC_IMPL", "CI", "MHA_SPEC_MEASUREMENTS")}
    proc = subprocess.run([sys.executable, "-m", "spec_tests.grade", *args], cwd=cwd or ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def results(out: Path) -> dict:
    """results.json, checked against Gradescope's format."""
    doc = json.loads((out / "results.json").read_text())
    assert RESULT_KEYS <= set(doc), f"results.json lacks {RESULT_KEYS - set(doc)}"
    assert isinstance(doc["score"], (int, float)) and isinstance(doc["execution_time"], int)
    assert isinstance(doc["output"], str) and doc["visibility"] in VISIBILITY
    for t in doc["tests"]:
        assert TEST_KEYS <= set(t), f"a test entry lacks {TEST_KEYS - set(t)}: {t.get('name')}"
        assert t["status"] in ("passed", "failed") and t["visibility"] in VISIBILITY
        assert 0 <= t["score"] <= t["max_score"] + 1e-9, t["name"]
        assert isinstance(t["tags"], list) and isinstance(t["output"], str)
    assert abs(sum(t["score"] for t in doc["tests"]) - doc["score"]) < 1e-3
    return doc


def worker_pids(out: Path) -> list[int]:
    """The worker processes the grading started, from the run's log ("isolation: ... worker pids [...]")."""
    pids = []
    for line in (out / "grading.log").read_text().splitlines():
        if line.startswith("isolation:") and "worker pids [" in line:
            pids += [int(p) for p in line.split("worker pids [")[1].rstrip("]").split(",") if p.strip()]
    return pids


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return "State:\tZ" not in f.read()
    except OSError:
        return False


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker.encode() in f.read() and alive(int(entry)):
                        found.append(int(entry))
            except OSError:
                continue
    return found
