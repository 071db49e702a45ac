"""results.json in Gradescope's autograder format: one Gradescope test per graded claim.

    {"score": 87.5, "execution_time": 14, "output": "<feedback.md>", "output_format": "md",
     "visibility": "visible", "stdout_visibility": "hidden",
     "tests": [{"name": "SDPA-1: softmax(...) ...", "number": "1.1", "score": 2.5, "max_score": 2.5,
                "status": "passed", "output": "...", "output_format": "md", "visibility": "visible",
                "tags": ["sdpa", "SDPA-1"], "extra_data": {"tests": {"passed": 12}}}]}

The top-level score is the sum of the tests' scores. See the README's "Grading a class" for the
autograder zip (setup.sh, run_autograder) that produces it on Gradescope.
"""

from __future__ import annotations

import json
from pathlib import Path

from spec_tests.grading import feedback
from spec_tests.grading.score import Grade
from spec_tests.harness import claims as catalogue


def results(grade: Grade) -> dict:
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
            "output": "\n".join(feedback.claim_section(grade, c)),
            "output_format": "md",
            "visibility": c.item.visibility,
            "tags": [chapter, c.item.claim],
            "extra_data": {"claim_status": c.status, "tests": dict(sorted(c.counts.items()))},
        })
    return {
        "score": grade.score,
        "execution_time": int(round(grade.run.seconds)),
        "output": feedback.markdown(grade),
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {"implementation": grade.run.implementation, "load_error": grade.run.load_error,
                       "timed_out": grade.run.timed_out, "rubric": grade.rubric.path},
        "tests": tests,
    }


def write(grade: Grade, out: Path) -> dict:
    doc = results(grade)
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(out / "results.json")
    return doc
