"""Running the specification on one submission: pytest subprocesses with isolation on.

    grading = pytest CHAPTERS --impl SUBMISSION --isolate --rubric R --claim <the rubric's claims>
              --spec-report report.json      (Hypothesis profile `grading`: derandomised)

The submission is copied into a fresh folder first (the worker gets its own copy again). The
chapter modules are shared out between as many pytest runs as the container allows (its CPU
quota and memory limit, read from the cgroup: harness/limits.py), side by side. The runs have a
time limit of their own, and every outcome is also streamed to a JSON-lines file (progress.py),
so a run stopped at its limit is still scored by what finished (partial, marked so).

A fault of the grader is never a grade: a run that the container killed (for memory) is run
again, alone; a collection or import error of the suite, a crash, or a claim that should have
run and has no result raises GraderFault, and grade.py writes a results.json that says the
autograder failed, with no score (`write_fault`), and exits with status 3.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader import uploads
from grader.rubric import Rubric, tested_claims
from spec_tests.harness import packages, rootdir
from spec_tests.sandbox import limits as limits_mod
from spec_tests.sandbox.session import REVIEW_LINE

ROOT = packages.SUITE_ROOT  # the folder holding spec_tests/ (the repository, or site-packages)
SPEC_DIR = packages.SPEC_TESTS
UNUSED_PLUGINS = ("cacheprovider", "xdist", "benchmark", "unraisableexception")  # start-up time, not needed


SubmissionError = uploads.SubmissionError  # the upload holds nothing the grader can run

# Resident memory of one pytest run and its worker, in MB (measured: NumPy ~300, PyTorch ~650 at the peak).
PART_MB = 700
TOTAL_LIMIT_S = 540  # Gradescope's default run limit is 600 s: stop before it, with time to write the results


class GraderFault(RuntimeError):
    """The grader itself failed (the suite, the machine): no score may be given for this run."""


def write_fault(out: Path, reason: str) -> None:
    """results.json for a run the grader could not complete: no score, the reason for the instructor."""
    out.mkdir(parents=True, exist_ok=True)
    doc = {"output": "The autograder failed, so your work has not been graded (this is not a score). "
                     "Your instructor can see why and will run it again.",
           "output_format": "md", "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
           "extra_data": {"autograder_fault": reason[-4000:]}}
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(out / "results.json")


@dataclass
class Run:
    name: str  # the submission's name (file stem or folder name)
    entry: str  # the file graded, relative to the submission
    records: list[dict] = field(default_factory=list)  # one per test: plugin.py's spec outcome
    implementation: dict | None = None  # what it declared: backend, device, dtypes
    load_error: str | None = None  # why it could not be imported
    timed_out: bool = False
    seconds: float = 0.0
    exit_code: int | None = None
    log: str = ""  # the end of pytest's output
    notes: list[str] = field(default_factory=list)
    review: list[str] = field(default_factory=list)  # tampering with the grader it saw: for a person to review


def stage(submission: Path, workdir: Path) -> uploads.Staged:
    """Copy the submission to workdir/submission and choose the file to grade (uploads.py)."""
    return uploads.stage(submission, workdir)


def clean(text: str, workdir: Path) -> str:
    """Messages as the learner should read them: no paths of the grading machine."""
    text = text.replace(str(workdir / "submission") + os.sep, "")
    text = re.sub(r"[^\s'\"]*mha-spec-worker-[^/\s'\"]+/impl/", "", text)
    return text.replace(str(workdir) + os.sep, "")


def parts_for(jobs: int, container: limits_mod.Container | None = None) -> int:
    """How many pytest runs share one submission: the CPUs and memory of the container that the batch's
    jobs leave free (1 to 4), not the host's core count."""
    c = container or limits_mod.container()
    by_cpu = int(c.cpus // max(1, jobs))
    by_memory = by_cpu if c.memory_mb is None else int(c.memory_mb // max(1, jobs) // PART_MB)
    return max(1, min(4, by_cpu, by_memory))


def _split(rubric: Rubric, parts: int) -> list[list[str]]:
    """The rubric's chapter modules in `parts` groups of about equal work (counted in tests)."""
    tested = tested_claims(rubric.exclude_tests)
    weight = {m: 0 for m in rubric.modules}
    for tests in (tested.get(c, []) for c in rubric.claims):
        for t in set(tests):
            weight[t.split("::")[0]] += 1
    groups: list[list[str]] = [[] for _ in range(min(parts, len(weight)) or 1)]
    load = [0] * len(groups)
    for m in sorted(weight, key=lambda m: -weight[m]):
        i = load.index(min(load))
        groups[i].append(m)
        load[i] += weight[m]
    return groups


def run(submission: Path, rubric: Rubric, workdir: Path, progress=None, parts: int = 1) -> Run:
    """Grade-run one submission in workdir, in `parts` pytest runs side by side (each with its own
    worker); `progress(done, collected)` is called as tests finish."""
    submission = Path(submission).resolve()
    staged = stage(submission, workdir)
    entry = staged.entry
    result = Run(name=staged.name, entry=staged.shown, notes=list(staged.notes))
    env = {k: v for k, v in os.environ.items() if k not in ("MHA_SPEC_IMPL", "CI", "PYTEST_ADDOPTS", "MHA_SPEC_NO_REPRO")}
    container = limits_mod.container()
    env.update(MHA_SPEC_PROFILE="grading", PYTHONHASHSEED="0",  # snippets on: feedback.py shows their input values
               MHA_SPEC_SPEED=f"{limits_mod.speed():.3f}",  # measured once here, not in every run
               MHA_SPEC_CPU_SHARE=f"{max(0.05, container.cpus / max(1, parts)):.3f}")
    began = time.monotonic()
    deadline = began + min(rubric.total_timeout, float(os.environ.get("MHA_SPEC_TOTAL_LIMIT", TOTAL_LIMIT_S)))
    groups = _split(rubric, parts)
    runs = _launch(groups, rubric, workdir, entry, env, 0)
    _wait(runs, result, deadline, progress)
    killed = [i for i, r in enumerate(runs) if r[0].returncode is not None and r[0].returncode < 0 and not r[4]]
    if killed and not result.timed_out:  # the container (not we) killed a run: once more, alone, in one run
        modules = [m for i in killed for m in groups[i]]
        result.notes.append(f"{len(killed)} grading run(s) were killed by the grading machine (signal "
                            f"{-runs[killed[0]][0].returncode}, out of memory?) and were run again, alone")
        env["MHA_SPEC_CPU_SHARE"] = f"{container.cpus:.3f}"
        again = _launch([modules], rubric, workdir, entry, env, len(runs))
        _wait(again, result, deadline, progress)
        runs = [r for i, r in enumerate(runs) if i not in killed] + again
    result.seconds = time.monotonic() - began
    result.exit_code = max(abs(proc.returncode or 0) for proc, *_ in runs)
    texts = [log.read_bytes().decode(errors="replace") for _, _, _, log, _ in runs]
    result.log = clean("\n".join(t[-20000 // len(texts):] for t in texts), workdir)
    for text in texts:  # the worker's session lists what it saw done to the grader (session.REVIEW_LINE)
        for line in text.splitlines():
            if line.startswith(REVIEW_LINE) and len(result.review) < 20:
                note = clean(line[len(REVIEW_LINE):].strip(), workdir)
                if note not in result.review:
                    result.review.append(note)
    for (proc, report, stream, _, _), text in zip(runs, texts):
        if proc.returncode is not None and proc.returncode < 0 and not result.timed_out:
            raise GraderFault(f"a grading run was killed by signal {-proc.returncode} twice (the grading machine: "
                              f"{container.describe()}):\n{clean(text[-3000:], workdir)}")
        _read(result, report, stream, text, workdir, proc.returncode)
    for r in result.records:
        r["message"] = clean(r.get("message") or "", workdir)
    if result.timed_out:
        result.notes.append(f"grading stopped after {result.seconds:.0f} s, its time limit: these results are "
                            "partial; tests that had not finished score 0")
    elif not result.load_error:
        _check_complete(result, rubric)
    return result


def _launch(groups, rubric: Rubric, workdir: Path, entry: Path, env: dict, first: int) -> list:
    runs = []
    for i, modules in enumerate(groups, first):
        report, stream, log = workdir / f"report{i}.json", workdir / f"progress{i}.jsonl", workdir / f"pytest{i}.log"
        cmd = [sys.executable, "-m", "pytest", "-q", "--no-header",
               "-p", "spec_tests.plugin", "-p", "grader.progress",  # the suite's first: it finds grader/ (packages.py)
               "--assert=plain",  # spec tests assert through check.py; rewriting every module would cost seconds
               "--tb=native",  # pytest's own traceback style parses each frame's source file: ~0.3 s per failure
               *[f"-p no:{p}" for p in UNUSED_PLUGINS], "--rootdir", str(ROOT), "-c", str(rootdir.config_file()),
               *[str(SPEC_DIR / m) for m in modules], "--impl", str(entry), "--isolate", "--rubric", rubric.path,
               "--claim", ",".join(rubric.claims), "--spec-report", str(report), "--no-claim-summary",
               *[f"--deselect=spec_tests/{t}" for t in rubric.exclude_tests]]
        with open(log, "wb") as out:
            proc = subprocess.Popen(cmd, cwd=workdir, env=dict(env, MHA_SPEC_PROGRESS=str(stream)), stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        with _LOCK:
            _RUNNING.add(proc)
        runs.append([proc, report, stream, log, False])  # False: not stopped by us
    return runs


def _wait(runs: list, result: Run, deadline: float, progress) -> None:
    seen = 0
    while any(r[0].poll() is None for r in runs):
        time.sleep(0.25)
        if progress is not None:
            counts = [_count(r[2]) for r in runs]
            done = sum(c[0] for c in counts)
            if done != seen:
                seen = done
                progress(done, sum(c[1] for c in counts))
        if time.monotonic() > deadline:
            result.timed_out = True
            for r in runs:
                r[4] = True
                _stop(r[0])
    with _LOCK:
        _RUNNING.difference_update(r[0] for r in runs)


def _check_complete(result: Run, rubric: Rubric) -> None:
    """Every graded claim with tests must have results: a gap is the grader's fault, not a zero."""
    seen = {c for r in result.records for c in r.get("claims", ())}
    tested = tested_claims(rubric.exclude_tests)
    missing = [c for c in rubric.claims if tested.get(c) and c not in seen]
    if missing:
        raise GraderFault(f"no results for the claims {', '.join(missing)}, which should have run "
                          f"(pytest exit status {result.exit_code}):\n{result.log[-3000:]}")


def _read(result: Run, report: Path, stream: Path, text: str, workdir: Path, code: int | None = 0) -> None:
    """Add one pytest run's outcomes (its report, or what it streamed before it was stopped) to result."""
    if code in (2, 3, 5) and not result.timed_out and "could not load the implementation" not in text:
        # 2: interrupted (a collection error), 3: pytest's internal error, 5: nothing collected
        raise GraderFault(f"the suite failed to run (pytest exit status {code}):\n{clean(text[-3000:], workdir)}")
    if report.exists():
        data = json.loads(report.read_text())
        result.records += [t for t in data["tests"] if t["impl"]]
        impl = next(iter(data["implementations"].values()), None)
        if impl:
            impl["path"] = result.entry  # not this machine's copy of it
            result.implementation = impl
        return
    result.records += [r["outcome"] for r in _lines(stream) if "outcome" in r and r["outcome"]["impl"]]
    match = re.search(r"could not load the implementation .*?:\s*\n?(.*?)(\nFix the error above|\Z)", text, re.S)
    if match and not result.timed_out:
        error = re.sub(r"^[\w.]*LoadError: ", "", match.group(1).strip())
        result.load_error = clean(error, workdir)
    elif not result.timed_out:
        raise GraderFault(f"the grading run ended without a report (exit code {code}):\n"
                          f"{clean(text[-3000:], workdir)}")


def _lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def _count(path: Path) -> tuple[int, int]:
    lines = _lines(path)
    collected = next((r["collected"] for r in lines if "collected" in r), 0)
    return sum(1 for r in lines if "outcome" in r), collected


_RUNNING: set = set()  # the grading runs under way (a batch runs several at once)
_LOCK = threading.Lock()


def stop_all() -> None:
    """Stop every grading run under way, and their workers (the grader was interrupted)."""
    with _LOCK:
        procs = list(_RUNNING)
    for proc in procs:
        _stop(proc)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM first (the suite then ends its workers), SIGKILL if that is not enough."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 15)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
