"""The instructors page's sample: a real grading run of a submission with two bugs.

    python -m docs_gen.grading_sample        writes docs_gen/fragments/grading_sample/

It writes a student's file (a correct NumPy implementation with the two bugs of
docs_gen/grading_sample_bugs.py: scores computed in float32, and LayerNorm's eps outside the square root), grades it with the default
rubric exactly as `python -m spec_tests.grade` does, and keeps what the grader wrote:
`feedback.md` (what the student reads), `results.json` (what Gradescope reads; the per-claim
outputs after the first few are left out of the copy on the page, and the top-level output, which
is feedback.md, is replaced by a pointer to it) and `grading.log`'s head (what the instructor reads).
docs/instructors.md includes these files and the bugs' source. The run takes about half a minute on two cores.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from docs_gen import FRAGMENTS, ROOT

OUT = FRAGMENTS / "grading_sample"
BASE = ROOT / "impls" / "mutants" / "_base.py"  # correct, self-contained NumPy
BUGS = "\n" + (Path(__file__).with_name("grading_sample_bugs.py")).read_text()  # the two bugs, shown on the page as they are
TESTS_SHOWN = 3  # per-claim entries of results.json kept on the page


def submission_text() -> str:
    base = BASE.read_text()
    return base[:base.index("def rewire(")] + BUGS


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mha-sample-") as work:
        sub = Path(work) / "attention.py"
        sub.write_text(submission_text())
        out = Path(work) / "out"
        proc = subprocess.run([sys.executable, "-m", "spec_tests.grade", str(sub), "--out", str(out)], cwd=ROOT,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stdout[-3000:] + proc.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"docs_gen.grading_sample: the grader exited with {proc.returncode}")
        feedback = (out / "feedback.md").read_text()
        doc = json.loads((out / "results.json").read_text())
        log = (out / "grading.log").read_text().split("\n\n", 1)[0]
    doc["output"] = "(feedback.md, shown above)"
    left = len(doc["tests"]) - TESTS_SHOWN
    doc["tests"] = doc["tests"][:TESTS_SHOWN] + [{"...": f"{left} more claims, one entry each"}]
    doc["extra_data"]["rubric"] = "grader/rubric.toml"
    (OUT / "feedback.md").write_text(feedback)
    (OUT / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
    (OUT / "grading.log").write_text(log.strip() + "\n")
    print(f"docs_gen.grading_sample: {doc['score']} / 100 -> {OUT.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
