"""results.json in Gradescope's autograder format: one Gradescope test per graded claim.

    {"score": 87.5, "execution_time": 14, "output": "<feedback.md>", "output_format": "md",
     "visibility": "visible", "stdout_visibility": "hidden",
     "extra_data": {"status": "graded", "students": [...], "similarity": {...}, ...},
     "tests": [{"name": "SDPA-1: softmax(...) ...", "number": "1.1", "score": 2.5, "max_score": 2.5,
                "status": "passed", "output": "...", "output_format": "md", "visibility": "visible",
                "tags": ["sdpa", "SDPA-1"], "extra_data": {"claim_status": "passed", "tests": {"passed": 12}}}]}

The top-level score is the sum of the tests' scores. Hidden means hidden: when the rubric makes a
claim `hidden`, `after_due_date` or `after_published`, its test carries that visibility, the
top-level `visibility` (the default Gradescope applies to results without their own) becomes the
most restrictive of them, and the top-level `output`, which students always see, holds no total,
no subtotal or count that includes such a claim, and nothing of it (feedback.py). Gradescope does
not show students their total while any test is hidden.

`extra_data` is for the instructor: the status for the gradebook, the student(s) from Gradescope's
submission_metadata.json or the roster, and what the copy check found (similarity.py). See the
README's "Grading a class" for the autograder zip (setup.sh, run_autograder).
"""

from __future__ import annotations

import json
from pathlib import Path

from grader import feedback
from grader.score import Grade
from spec_tests.harness import claims as catalogue

RESTRICTIVE = ("hidden", "after_published", "after_due_date", "visible")  # most restrictive first


def visibility(grade: Grade) -> str:
    """The top-level visibility: the most restrictive of the claims' visibilities."""
    used = {c.item.visibility for c in grade.claims}
    return next((v for v in RESTRICTIVE if v in used), "visible")


def results(grade: Grade, extra: dict | None = None) -> dict:
    chapter_order = list(catalogue.chapters())
    numbers: dict[str, int] = {}
    tests = []
    for c in grade.claims:
        chapter = c.item.chapter
        numbers[chapter] = numbers.get(chapter, 0) + 1
        tests.append({
            "name": f"{c.item.claim}: {c.claim.summary}",
            "number": f"{chapter_order.index(chapter) + 1}.{numbers[chapter]}",
            "score": c.score,
            "max_score": c.max_score,
            "status": "passed" if c.status in ("passed", "not applicable") else "failed",
            "output": feedback.claim_output(grade, c),
            "output_format": "md",
            "visibility": c.item.visibility,
            "tags": [chapter, c.item.claim],
            "extra_data": {"claim_status": c.status, "tests": dict(sorted(c.counts.items()))},
        })
    doc = {
        "score": grade.score,
        "execution_time": int(round(grade.run.seconds)),
        "output": feedback.markdown(grade),
        "output_format": "md",
        "visibility": visibility(grade),
        "stdout_visibility": "hidden",
        "extra_data": {"status": grade.status, "graded_file": grade.run.entry,
                       "implementation": grade.run.implementation, "load_error": grade.run.load_error,
                       "timed_out": grade.run.timed_out, "missing_dtypes": grade.missing_dtypes,
                       "review": list(getattr(grade.run, "review", []) or []),
                       "chapters": {k: [round(v[0], 2), round(v[1], 2)] for k, v in grade.chapters().items()},
                       "rubric": grade.rubric.path, **(extra or {})},
        "tests": tests,
    }
    if grade.leaderboard is not None:  # Gradescope's leaderboard entries (grader/leaderboard.py)
        doc["leaderboard"] = grade.leaderboard.entries()
        doc["extra_data"]["leaderboard"] = grade.leaderboard.extra()
    return doc


def write(grade: Grade, out: Path, extra: dict | None = None) -> dict:
    doc = results(grade, extra)
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(out / "results.json")
    return doc
