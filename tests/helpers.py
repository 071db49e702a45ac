"""Running the suite in a subprocess, as a user would, and reading its JSON report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from impls import mutants as known_bugs

ROOT = Path(__file__).resolve().parents[1]


def run_suite(*args: str, cwd: Path = ROOT, report: Path | None = None, timeout: int = 600, env=None):
    """Run `python -m pytest ARGS` with the ci profile; return (exit code, output, parsed report or None)."""
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    if report is not None:
        cmd += ["--spec-report", str(report)]
    full_env = {**os.environ, "CI": "1", "MHA_SPEC_NO_REPRO": "1", **(env or {})}
    full_env.pop("MHA_SPEC_IMPL", None)
    full_env.pop("MHA_SPEC_MEASUREMENTS", None)  # a meta test's run is not the conformance run the docs show
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env)
    data = json.loads(report.read_text()) if report is not None and report.exists() else None
    return proc.returncode, proc.stdout + proc.stderr, data


MUTANTS_DIR = known_bugs.FOLDER


def mutant_names() -> list[str]:
    return known_bugs.names()


def mutant_attributes(name: str) -> dict:
    """A mutant's literal module attributes (BUG, CAUGHT_BY, DTYPES, ...) and docstring, as the catalogue's
    reader (impls/mutants/__init__.py) reads them, without importing the mutant: collecting the meta tests
    must not need torch, which a few mutants import."""
    bug = known_bugs.read(name)
    return {"__doc__": bug.doc or None, **bug.attributes}


def mutant_claims(name: str) -> list[str]:
    """The claims a mutant is recorded to fail: CAUGHT_BY, then ALSO_CAUGHT_BY."""
    return known_bugs.read(name).claims


def mutant_needs(name: str) -> list[str]:
    """The optional packages (torch, triton) a mutant imports, directly or through the module it extends."""
    from spec_tests.harness.diagnosis import packages_needed

    return sorted(packages_needed((MUTANTS_DIR / f"{name}.py").read_text(encoding="utf-8")))


def missing_packages(names) -> list[str]:
    import importlib.util

    return [n for n in names if importlib.util.find_spec(n) is None]
