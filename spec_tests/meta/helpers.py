"""Running the suite in a subprocess, as a user would, and reading its JSON report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
