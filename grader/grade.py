"""Grade student implementations against the specification.

    python -m spec_tests.grade SUBMISSION --out OUTDIR [--rubric FILE] [--metadata FILE]
    python -m spec_tests.grade --batch SUBMISSIONS_DIR --out OUTDIR [--jobs N] [--rubric FILE] [--roster CSV]

SUBMISSION is what a student uploaded: a .py file of any name, a folder, a .zip, several files
with helpers; the grader grades the module that defines the contract's functions and says which
(grading/uploads.py). One submission gives OUTDIR/results.json (Gradescope's format),
OUTDIR/feedback.md (for the learner) and OUTDIR/grading.log (for the instructor); a batch gives
OUTDIR/<name>/ for each submission and OUTDIR/gradebook.csv (one row per submission: student,
one column per chapter, total, status, copy check). The submission always runs isolated
(`--isolate`): its own process, time and memory limits, an unprivileged user under root.

Every submission is compared with the public reference and implementations, and in a batch with
the others (grading/similarity.py); a near-copy is reported to the instructor (results.json
extra_data, the gradebook, grading.log, this command's output), never to the student, and it
never changes a score.

--metadata: Gradescope's submission_metadata.json (read by default from next to the submission
folder, /autograder/submission_metadata.json); its students and submission id go into
results.json's extra_data and grading.log. --roster: a CSV whose `file` column names a
submission (file or folder name, with or without .py) and whose other columns (name, email,
id, ...) identify the student; they become gradebook columns.

Exit status: 0 when grading completed, whatever the scores; 2 for a bad command line or
rubric; 3 when the grader itself failed.
"""

from __future__ import annotations

import argparse
import csv
import json
import signal
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from threading import Lock

from grader import feedback, gradescope, leaderboard, rubric as rubric_mod, score, similarity, uploads
from grader import run as run_mod
from spec_tests.harness import claims as catalogue

LEADERBOARD_S = 60  # seconds the leaderboard's timing needs at most (two workers, a few timed calls)


def grade_one(submission: Path, out: Path, rubric: rubric_mod.Rubric, progress=None, parts: int = 1,
              students: list[dict] | None = None, peers: list | None = None, info: dict | None = None) -> score.Grade:
    """Grade one submission into `out` (results.json, feedback.md, grading.log), in `parts` runs side by side."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mha-grade-") as work:
        try:
            result = run_mod.run(submission, rubric, Path(work), progress, parts)
        except run_mod.SubmissionError as exc:
            name = submission.stem if submission.is_file() else submission.name
            result = run_mod.Run(name=name, entry=submission.name, load_error=str(exc))
        except Exception as exc:  # a fault of the grader is never a grade: results.json says so, no score
            run_mod.write_fault(out, f"{type(exc).__name__}: {exc}")
            raise run_mod.GraderFault(str(exc)) from exc
    grade = score.grade(rubric, result)
    if rubric.leaderboard is not None:
        grade.leaderboard = ranking(submission, rubric, result)
    copies = similarity.report(result.name, source_text(submission), peers)
    extra = {"students": students or [], **(info or {}), "similarity": copies}
    gradescope.write(grade, out, extra)
    (out / "feedback.md").write_text(feedback.markdown(grade))
    (out / "grading.log").write_text("\n".join(instructor_lines(grade, extra)) + "\n\n" + result.log)
    return grade


def ranking(submission: Path, rubric: rubric_mod.Rubric, result: run_mod.Run):
    """The rubric's optional leaderboard (grader/leaderboard.py), unless grading left no time for it."""
    if result.load_error or result.timed_out or result.seconds > rubric.total_timeout - LEADERBOARD_S:
        why = ("it could not be imported" if result.load_error else
               f"grading left less than {LEADERBOARD_S} s of the {rubric.total_timeout:g} s for timing it")
        return leaderboard.Board(rubric.leaderboard, leaderboard.Measure(problem=why), leaderboard.Measure())
    return leaderboard.run(submission, rubric, rubric.leaderboard)


def source_text(submission: Path) -> str:
    """Every .py file of an upload but the student's own tests, for the copy check."""
    try:
        with tempfile.TemporaryDirectory(prefix="mha-copy-") as work:
            target = Path(work) / "submission"
            uploads._copy(Path(submission), target)
            return "\n".join((target / rel).read_text(errors="replace") for rel in uploads.python_files(target)
                             if not uploads._is_test(rel))
    except (OSError, uploads.SubmissionError):
        return ""


def instructor_lines(grade: score.Grade, extra: dict) -> list[str]:
    """The head of grading.log: who, what was graded, the status, the copy check."""
    who = "; ".join(", ".join(f"{k}={v}" for k, v in s.items() if v not in (None, "")) for s in extra["students"])
    copies = extra["similarity"]
    lines = [f"submission: {grade.run.name} (graded file: {grade.run.entry})",
             f"students: {who or 'unknown'}"]
    if extra.get("submission_id"):
        lines.append(f"gradescope submission id: {extra['submission_id']}")
    lines += [f"REVIEW: the submission tampered with the grader: {note}" for note in grade.run.review]
    lines += [f"status: {grade.status}; score {grade.score:.2f} / {grade.max_score:.2f}",
              "copy check: " + (f"FLAGGED, {copies['summary']}" if copies["flagged"] else
                                "no near-copy (largest share: " + ", ".join(
                                    f"{m['source']} {m['share']:.0%}" for m in copies["public"][:2]) + ")")]
    return lines


def read_metadata(path: Path | None) -> tuple[list[dict], dict]:
    """Gradescope's submission_metadata.json: the students (name, email, id) and the submission's id."""
    if path is None or not path.is_file():
        return [], {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return [], {"metadata_error": f"{path}: {exc}"}
    users = [{"name": u.get("name"), "email": u.get("email"), "id": u.get("id")} for u in data.get("users") or []]
    info = {"submission_id": data.get("id"), "submitted_at": data.get("created_at"),
            "assignment": (data.get("assignment") or {}).get("title")}
    return users, {k: v for k, v in info.items() if v is not None}


def read_roster(path: Path) -> tuple[list[str], dict[str, dict]]:
    """A roster CSV: a `file` column (submission file or folder name) and columns identifying the student."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "file" not in rows[0]:
        raise ValueError(f"--roster {path}: the first row must name the columns, one of them `file`")
    columns = [c for c in rows[0] if c != "file"]
    mapping = {}
    for row in rows:
        key = Path(row["file"].strip()).name
        for name in {key, key.removesuffix(".py").removesuffix(".zip")}:
            mapping[name] = {c: row[c] for c in columns}
    return columns, mapping


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
                  and (p.is_dir() or p.suffix in (".py", ".zip")))


def batch(folder: Path, out: Path, rubric: rubric_mod.Rubric, jobs: int,
          roster: tuple[list[str], dict[str, dict]] | None = None) -> list[tuple[str, score.Grade | str]]:
    subs = submissions_in(folder)
    names = [p.stem if p.is_file() else p.name for p in subs]
    if len(set(names)) != len(names):
        raise SystemExit(f"two submissions in {folder} share a name: {sorted(n for n in names if names.count(n) > 1)}")
    columns, people = roster or ([], {})
    peers = similarity.pairwise({n: source_text(p) for n, p in zip(names, subs)})
    bar = Bar(len(subs), "grading")
    finished = []
    lock = Lock()

    def one(sub: Path, name: str):
        who = people.get(sub.name) or people.get(name)
        try:
            grade = grade_one(sub, out / name, rubric, parts=run_mod.parts_for(jobs),
                              students=[who] if who else [], peers=peers.get(name))
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
    write_gradebook(out / "gradebook.csv", results, rubric, columns,
                    {n: people.get(s.name) or people.get(n) or {} for n, s in zip(names, subs)})
    for name, outcome in results:
        copies = _copies(out / name)
        if copies.get("flagged"):
            print(f"copy check: {name}: {copies['summary']} (see {out / name / 'grading.log'})", file=sys.stderr)
    return results


def _copies(folder: Path) -> dict:
    try:
        return json.loads((folder / "results.json").read_text())["extra_data"]["similarity"]
    except (OSError, ValueError, KeyError):
        return {}


def write_gradebook(path: Path, results, rubric: rubric_mod.Rubric, columns: list[str] = (),
                    people: dict[str, dict] | None = None) -> None:
    """One row per submission: the student's columns (roster), chapters, total, status, copy check."""
    chapters = [c for c in catalogue.chapters() if any(i.chapter == c for i in rubric.items)]
    people = people or {}
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["submission", *columns, *chapters, "total", "max", "status", "graded_file", "copy_check"])
        for name, outcome in results:
            who = [people.get(name, {}).get(c, "") for c in columns]
            if isinstance(outcome, str):
                w.writerow([name, *who, *[""] * len(chapters), "", f"{rubric.total:.2f}", "autograder fault",
                            "", ""])
                continue
            by = outcome.chapters()
            copies = _copies(path.parent / name)
            w.writerow([name, *who, *[f"{by.get(c, (0.0, 0.0))[0]:.2f}" for c in chapters],
                        f"{outcome.score:.2f}", f"{outcome.max_score:.2f}", outcome.status, outcome.run.entry,
                        copies.get("summary", "")])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m spec_tests.grade", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("submission", nargs="?", type=Path, help="a .py file or a folder holding one")
    p.add_argument("--batch", type=Path, metavar="DIR", help="grade every submission in DIR")
    p.add_argument("--out", type=Path, required=True, metavar="OUTDIR")
    p.add_argument("--rubric", type=Path, metavar="FILE", help=f"default: {rubric_mod.DEFAULT}")
    p.add_argument("--jobs", type=int, default=1, help="submissions graded at once (with --batch)")
    p.add_argument("--roster", type=Path, metavar="CSV", help="with --batch: file -> student columns for the gradebook")
    p.add_argument("--metadata", type=Path, metavar="FILE",
                   help="Gradescope's submission_metadata.json (default: next to the submission folder, if there)")
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
            try:
                roster = read_roster(args.roster) if args.roster else None
            except (OSError, ValueError, KeyError) as exc:
                p.error(str(exc))
            results = batch(args.batch, args.out, rubric, args.jobs, roster)
            failed = [n for n, o in results if isinstance(o, str)]
            print(f"graded {len(results) - len(failed)} of {len(results)} submissions in "
                  f"{time.monotonic() - began:.0f} s: {args.out / 'gradebook.csv'}")
            return 3 if failed else 0
        bar = Bar(0, args.submission.name)
        meta = args.metadata or args.submission.resolve().parent / "submission_metadata.json"
        students, info = read_metadata(meta)
        grade = grade_one(args.submission, args.out, rubric, progress=lambda d, t: bar.show(d, t),
                          parts=run_mod.parts_for(1), students=students, info=info)
        bar.close()
        print(f"{grade.run.name}: {grade.score:.4g} / {grade.max_score:.4g} ({grade.status}) in "
              f"{grade.run.seconds:.0f} s -> {args.out / 'results.json'}, {args.out / 'feedback.md'}")
        print("\n".join((args.out / "grading.log").read_text().split("\n\n", 1)[0].splitlines()[1:]))
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
