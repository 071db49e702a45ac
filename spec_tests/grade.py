"""Grade student implementations against the specification.

    python -m spec_tests.grade SUBMISSION --out OUTDIR [--rubric FILE]
    python -m spec_tests.grade --batch SUBMISSIONS_DIR --out OUTDIR [--jobs N] [--rubric FILE]

SUBMISSION is a .py file, or a folder holding one (or holding attention.py among others).
One submission gives OUTDIR/results.json (Gradescope's format) and OUTDIR/feedback.md (for the
learner); a batch gives OUTDIR/<name>/ for each submission and OUTDIR/gradebook.csv (one row
per submission, one column per chapter, the total). The submission always runs isolated
(`--isolate`): its own process, time and memory limits, an unprivileged user under root.

Exit status: 0 when grading completed, whatever the scores; 2 for a bad command line or
rubric; 3 when the grader itself failed.
"""

from __future__ import annotations

import argparse
import csv
import signal
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from threading import Lock

from spec_tests.grading import feedback, gradescope, rubric as rubric_mod, score
from spec_tests.grading import run as run_mod
from spec_tests.harness import claims as catalogue


def grade_one(submission: Path, out: Path, rubric: rubric_mod.Rubric, progress=None, parts: int = 1) -> score.Grade:
    """Grade one submission into `out` (results.json, feedback.md, grading.log), in `parts` runs side by side."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mha-grade-") as work:
        try:
            result = run_mod.run(submission, rubric, Path(work), progress, parts)
        except run_mod.SubmissionError as exc:
            name = submission.stem if submission.suffix == ".py" else submission.name
            result = run_mod.Run(name=name, entry=submission.name, load_error=str(exc))
        except Exception as exc:  # a fault of the grader is never a grade: results.json says so, no score
            run_mod.write_fault(out, f"{type(exc).__name__}: {exc}")
            raise run_mod.GraderFault(str(exc)) from exc
    grade = score.grade(rubric, result)
    gradescope.write(grade, out)
    (out / "feedback.md").write_text(feedback.markdown(grade))
    (out / "grading.log").write_text(result.log)
    return grade


class Bar:
    """A one-line progress bar on stderr (a line per step when stderr is not a terminal)."""

    def __init__(self, total: int, label: str):
        self.total, self.label, self.done, self.lock = total, label, 0, Lock()
        self.tty = sys.stderr.isatty()
        self.began = time.monotonic()

    def show(self, done: int, total: int | None = None, note: str = "") -> None:
        with self.lock:
            self.done, self.total = done, total or self.total
            width = 30
            filled = int(width * self.done / self.total) if self.total else 0
            line = (f"{self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                    f"{time.monotonic() - self.began:5.0f} s {note}")
            if self.tty:
                sys.stderr.write("\r" + line[:120].ljust(120))
            elif note:
                sys.stderr.write(line + "\n")
            sys.stderr.flush()

    def close(self) -> None:
        if self.tty:
            sys.stderr.write("\n")


def submissions_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith((".", "_"))
                  and (p.is_dir() or p.suffix == ".py"))


def batch(folder: Path, out: Path, rubric: rubric_mod.Rubric, jobs: int) -> list[tuple[str, score.Grade | str]]:
    subs = submissions_in(folder)
    names = [p.stem if p.is_file() else p.name for p in subs]
    if len(set(names)) != len(names):
        raise SystemExit(f"two submissions in {folder} share a name: {sorted(n for n in names if names.count(n) > 1)}")
    bar = Bar(len(subs), "grading")
    finished = []
    lock = Lock()

    def one(sub: Path, name: str):
        try:
            grade = grade_one(sub, out / name, rubric, parts=run_mod.parts_for(jobs))
            note = f"{name}: {grade.score:.4g}/{grade.max_score:.4g}"
            outcome = grade
        except Exception as exc:  # noqa: BLE001 - one submission's grader failure must not stop the batch
            outcome = f"grader error: {type(exc).__name__}: {exc}"
            note = f"{name}: {outcome}"
        with lock:
            finished.append(name)
            bar.show(len(finished), note=note)
        return name, outcome

    bar.show(0)
    pool = ThreadPoolExecutor(max_workers=max(1, jobs))
    try:
        results = list(pool.map(one, subs, names))
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)  # start no more; the runs under way are stopped
        run_mod.stop_all()
        raise
    pool.shutdown()
    bar.close()
    write_gradebook(out / "gradebook.csv", results, rubric)
    return results


def write_gradebook(path: Path, results, rubric: rubric_mod.Rubric) -> None:
    chapters = [c for c in catalogue.chapters() if any(i.chapter == c for i in rubric.items)]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["submission", *chapters, "total", "max", "status"])
        for name, outcome in results:
            if isinstance(outcome, str):
                w.writerow([name, *[""] * len(chapters), "", rubric.total, outcome])
                continue
            by = outcome.chapters()
            status = ("could not be imported" if outcome.run.load_error else
                      "stopped at the time limit" if outcome.run.timed_out else "graded")
            w.writerow([name, *[f"{by.get(c, (0.0, 0.0))[0]:.4f}" for c in chapters],
                        f"{outcome.score:.4f}", f"{outcome.max_score:.4f}", status])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m spec_tests.grade", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("submission", nargs="?", type=Path, help="a .py file or a folder holding one")
    p.add_argument("--batch", type=Path, metavar="DIR", help="grade every submission in DIR")
    p.add_argument("--out", type=Path, required=True, metavar="OUTDIR")
    p.add_argument("--rubric", type=Path, metavar="FILE", help=f"default: {rubric_mod.DEFAULT}")
    p.add_argument("--jobs", type=int, default=1, help="submissions graded at once (with --batch)")
    args = p.parse_args(argv)
    if (args.submission is None) == (args.batch is None):
        p.error("give one SUBMISSION, or --batch DIR")
    try:
        rubric = rubric_mod.load(args.rubric)
    except rubric_mod.RubricError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for note in rubric.notes:
        print(f"note: {note}", file=sys.stderr)
    began = time.monotonic()
    signal.signal(signal.SIGTERM, _interrupted)
    signal.signal(signal.SIGINT, _interrupted)
    try:
        if args.batch is not None:
            if not args.batch.is_dir():
                p.error(f"--batch {args.batch}: not a folder")
            args.out.mkdir(parents=True, exist_ok=True)
            results = batch(args.batch, args.out, rubric, args.jobs)
            failed = [n for n, o in results if isinstance(o, str)]
            print(f"graded {len(results) - len(failed)} of {len(results)} submissions in "
                  f"{time.monotonic() - began:.0f} s: {args.out / 'gradebook.csv'}")
            return 3 if failed else 0
        bar = Bar(0, args.submission.name)
        grade = grade_one(args.submission, args.out, rubric, progress=lambda d, t: bar.show(d, t),
                          parts=run_mod.parts_for(1))
        bar.close()
        print(f"{grade.run.name}: {grade.score:.4g} / {grade.max_score:.4g} in {grade.run.seconds:.0f} s "
              f"-> {args.out / 'results.json'}, {args.out / 'feedback.md'}")
        return 0
    except Exception as exc:  # noqa: BLE001 - the grader's own failure: exit 3, results.json without a score
        if args.submission is not None and not (args.out / "results.json").exists():
            run_mod.write_fault(args.out, f"{type(exc).__name__}: {exc}")
        print(f"the grader failed: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        print("\ninterrupted: the runs under way were stopped", file=sys.stderr)
        return 130


def _interrupted(signum, frame):
    run_mod.stop_all()  # each run's suite ends its own workers on SIGTERM
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
