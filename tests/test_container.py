"""The grader inside Gradescope's default container: 768 MB of memory and half a CPU.

Where the machine allows it (root, cgroup v1 cpu and memory controllers writable), the test makes
a cgroup with those limits, builds the autograder's layout (/autograder/source, submission,
results) in a temporary folder, runs `run_autograder` inside the cgroup, and checks that a correct
submission scores full marks within 3 minutes, with no process killed for memory. Elsewhere it
skips, saying why. The cgroup is removed afterwards.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import ROOT

MEMORY_MB, CPU_QUOTA = 768, 0.5
CGROUP = Path("/sys/fs/cgroup")
SUBMISSIONS = {"numpy": ROOT / "impls" / "mutants" / "_base.py"}  # a correct, self-contained NumPy file


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "needs root to make a cgroup"
    for controller in ("cpu", "memory"):
        folder = CGROUP / controller
        if not (folder / "cgroup.procs").exists():
            return f"no cgroup v1 {controller} controller at {folder} (cgroup v2 is not set up by this test)"
        if not os.access(folder, os.W_OK):
            return f"{folder} is not writable (a container without cgroup rights)"
    return None


class _Cgroup:
    def __init__(self, name: str):
        self.cpu, self.memory = CGROUP / "cpu" / name, CGROUP / "memory" / name

    def __enter__(self):
        for d in (self.cpu, self.memory):
            d.mkdir(exist_ok=True)
        (self.cpu / "cpu.cfs_period_us").write_text("100000")
        (self.cpu / "cpu.cfs_quota_us").write_text(str(int(100000 * CPU_QUOTA)))
        (self.memory / "memory.limit_in_bytes").write_text(str(MEMORY_MB * 2**20))
        if (self.memory / "memory.memsw.limit_in_bytes").exists():
            (self.memory / "memory.memsw.limit_in_bytes").write_text(str(MEMORY_MB * 2**20))
        return self

    def preexec(self):  # in the child, before exec: join the cgroup
        pid = str(os.getpid())
        (self.cpu / "cgroup.procs").write_text(pid)
        (self.memory / "cgroup.procs").write_text(pid)

    def peak_mb(self) -> float:
        return int((self.memory / "memory.max_usage_in_bytes").read_text()) / 2**20

    def oom_kills(self) -> int:
        for line in (self.memory / "memory.oom_control").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def __exit__(self, *exc):
        for d in (self.cpu, self.memory):
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except OSError:  # processes still leaving
                    time.sleep(0.1)


def _layout(tmp_path: Path, submission: Path) -> Path:
    """The autograder's folders, as Gradescope makes them, with this repository as the source."""
    autograder = tmp_path / "autograder"
    (autograder / "submission").mkdir(parents=True)
    (autograder / "results").mkdir()
    (autograder / "source").symlink_to(ROOT)
    shutil.copyfile(submission, autograder / "submission" / "attention.py")
    return autograder


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_a_correct_submission_scores_full_marks_in_the_default_container(kind, tmp_path):
    why = _why_not()
    if why:
        pytest.skip(why)
    if kind == "torch":
        if importlib.util.find_spec("torch") is None:
            pytest.skip("PyTorch is not installed")
        SUBMISSIONS["torch"] = _torch_submission(tmp_path)
    autograder = _layout(tmp_path, SUBMISSIONS[kind])
    env = {k: v for k, v in os.environ.items() if k not in ("MHA_SPEC_IMPL", "CI")}
    env.update(AUTOGRADER=str(autograder), MHA_SPEC_PYTHON=sys.executable, PYTHONPATH=str(ROOT))
    with _Cgroup(f"mha-spec-meta-{os.getpid()}-{kind}") as cg:
        began = time.monotonic()
        proc = subprocess.run(["bash", str(ROOT / "grader" / "gradescope" / "run_autograder")], env=env,
                              preexec_fn=cg.preexec, capture_output=True, text=True, timeout=600)
        seconds = time.monotonic() - began
        peak, kills = cg.peak_mb(), cg.oom_kills()
    doc = json.loads((autograder / "results" / "results.json").read_text())
    print(f"{kind}: {seconds:.0f} s, peak memory {peak:.0f} MB, {kills} OOM kill(s)")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert doc.get("score") == 100, f"{kind}: {doc.get('score')}, {doc.get('extra_data')}\n{doc['output'][:3000]}"
    assert kills == 0, f"the container killed {kills} process(es) for memory"
    assert seconds < 180, f"grading took {seconds:.0f} s in the container (at most 180 s)"


def _torch_submission(tmp_path: Path) -> Path:
    """A correct PyTorch file without the suite's own modules: impls/torch_naive.py with the suite's modules it
    imports from (reference.checks, impls._mask_keywords, ...) inlined before it, each once."""
    import re

    importing = re.compile(r"^from (reference|impls)\.(\w+) import .*\n", flags=re.M)
    done: list[str] = []

    def inline(path: Path) -> str:
        text = re.sub(r'^""".*?"""\n', "", path.read_text(), flags=re.S)
        head = ""
        for package, module in importing.findall(text):
            if f"{package}.{module}" not in done:
                done.append(f"{package}.{module}")
                head += inline(ROOT / package / f"{module}.py") + "\n"
        return head + importing.sub("", text)

    path = tmp_path / "torch_submission.py"
    body = inline(ROOT / "impls" / "torch_naive.py")
    future = "from __future__ import annotations\n"
    path.write_text((future if future in body else "") + body.replace(future, ""))
    return path
