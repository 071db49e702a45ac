"""Running the suite in a subprocess, as a user would, and reading its JSON report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


MUTANTS_DIR = ROOT / "impls" / "mutants"


def mutant_names() -> list[str]:
    return sorted(p.stem for p in MUTANTS_DIR.glob("*.py") if not p.stem.startswith("_"))


def mutant_attributes(name: str) -> dict:
    """A mutant's literal module attributes (BUG, CAUGHT_BY, DTYPES, ...) and docstring, read without
    importing it: collecting the meta tests must not need torch, which a few mutants import."""
    import ast

    tree = ast.parse((MUTANTS_DIR / f"{name}.py").read_text(encoding="utf-8"))
    values: dict = {"__doc__": ast.get_docstring(tree)}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return values


def mutant_claims(name: str) -> list[str]:
    """The claims a mutant is recorded to fail: CAUGHT_BY, then ALSO_CAUGHT_BY."""
    attrs = mutant_attributes(name)
    return list(dict.fromkeys((attrs["CAUGHT_BY"], *attrs.get("ALSO_CAUGHT_BY", ()))))


def mutant_needs(name: str) -> list[str]:
    """The optional packages (torch, triton) a mutant imports, directly or through the module it extends."""
    from spec_tests.harness.diagnosis import packages_needed

    return sorted(packages_needed((MUTANTS_DIR / f"{name}.py").read_text(encoding="utf-8")))


def missing_packages(names) -> list[str]:
    import importlib.util

    return [n for n in names if importlib.util.find_spec(n) is None]
