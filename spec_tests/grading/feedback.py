"""feedback.md: the learner's report, by chapter and claim.

For each claim that failed: what failed (the check), the smallest failing input (Hypothesis
shrinks it; the falsifying example is quoted), expected and seen values, the likely cause when
the failure matches a known bug (spec_tests/harness/diagnosis.py), a hint, and the section of
the textbook to read. Hidden claims are counted, not described.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path

from spec_tests.grading.score import ClaimGrade, Grade
from spec_tests.harness import claims as catalogue

HINTS = Path(__file__).resolve().parent / "hints.toml"
MAX_DETAILED = 1  # failing tests described in full, per claim
MAX_LISTED = 6  # further failing tests named, per claim
DROP = ("implementation:",)  # lines of a failure message that feedback.md does not repeat



@cache
def hints() -> dict[str, str]:
    with open(HINTS, "rb") as f:
        return tomllib.load(f)["hints"]


def hint(claim_id: str) -> str:
    return hints().get(claim_id) or catalogue.get(claim_id).statement


def link(grade: Grade, claim_id: str) -> str:
    doc = catalogue.get(claim_id).doc  # docs/<page>#<anchor>
    base = grade.rubric.docs_url
    return base.rstrip("/") + "/" + doc.removeprefix("docs/").replace(".md#", "/#") if base else doc


def test_label(record: dict) -> str:
    """test_name[params], without the implementation's name: test_output_shape[float64-self-2x4x64]."""
    nodeid = record.get("nodeid", "")
    params = nodeid.partition("[")[2].rstrip("]")
    impl = record.get("impl", "")
    if params.startswith(impl + "-"):
        params = params[len(impl) + 1:]
    return f"{record['test']}[{params}]" if params else record["test"]


EXAMPLE = re.compile(r"^(Falsifying|Failing)( explicit)? (example|test case)")
KEYS = ("check", "input", "problem", "likely cause")


def describe_failure(record: dict) -> list[str]:
    """A failed test's message as feedback lines (Markdown, inside the claim's list item)."""
    outcome, message = record["outcome"], (record.get("message") or "").strip()
    if outcome == "not implemented":
        return [f"not implemented: {message.removeprefix('not implemented: ')}"]
    if outcome != "failed":
        return [f"{outcome}: {message}" if message else outcome]
    lines = message.splitlines()
    if lines and " does not hold" in lines[0]:  # the suite's own feedback (check.py, isolation.py)
        return _spec_feedback(lines[1:])
    return ["the test stopped with an error:", "```text", *_error(lines), "```"] + _example(lines)


def _error(lines: list[str]) -> list[str]:
    """The exception at the end of a traceback (Python's own format, or pytest's "E   " lines)."""
    end = next((i for i, ln in enumerate(lines) if EXAMPLE.match(ln.lstrip("E").strip())), len(lines))
    body = lines[:end]
    marked = [ln[1:].strip() for ln in body if ln.startswith("E ")]
    if marked:
        return marked[-8:]
    frames = [i for i, ln in enumerate(body) if ln.startswith('  File "')]
    tail = body[frames[-1] + 1:] if frames else body
    text = [ln for ln in tail if ln.strip() and not ln.startswith("    ")]  # the frame's code and carets
    return (text or body)[-8:]


def _example(lines: list[str]) -> list[str]:
    """Hypothesis's falsifying example (the smallest failing input it found), as a code block."""
    for i, ln in enumerate(lines):
        if EXAMPLE.match(ln.lstrip("E").strip()):
            block = [x[1:] if x.startswith("E") else x for x in lines[i:i + 60]]
            end = next((j for j, x in enumerate(block) if x.strip() == ")"), len(block) - 1)
            return ["smallest failing input found:", "```text", *[x.rstrip() for x in block[:end + 1]], "```"]
    return []


def _spec_feedback(lines: list[str]) -> list[str]:
    keyed, details, rest = [], [], []
    section = "main"
    for ln in lines:
        stripped = ln.strip()
        if stripped.startswith(("reproduce (paste into Python)", "read:")):
            section = "skip"  # the snippet names files of the grading machine; the link is given below
            continue
        if EXAMPLE.match(stripped):
            section = "example"
        if section == "skip" and not ln.startswith("      "):
            section = "main"
        if section == "skip":
            continue
        if section == "example":
            rest.append(ln)
            continue
        key, _, value = stripped.partition(": ")
        if key in KEYS and value:
            keyed.append(f"**{key}**: {value}")
        elif stripped and not stripped.startswith(DROP):
            details.append(ln[2:] if ln.startswith("  ") else ln)
    out = keyed[:2] + (["```text", *details, "```"] if details else []) + keyed[2:]
    return out + _example(rest)


def claim_section(grade: Grade, c: ClaimGrade) -> list[str]:
    """The Markdown lines for one claim: status line, then details if it did not pass."""
    head = f"- **{c.item.claim}** {c.claim.summary}: {c.status}, {c.score:.4g} / {c.max_score:.4g}"
    if c.status in ("passed", "not applicable"):
        return [head]
    if c.status == "not run":
        return [head, "  - no test of this claim ran (see the note at the top)"]
    lines = [head]
    # the failure that names a known bug, if one does, is the most useful one to describe in full
    failures = sorted(c.failures, key=lambda r: "likely cause:" not in (r.get("message") or ""))
    for r in failures[:MAX_DETAILED]:
        lines.append(f"  - failed test: `{test_label(r)}`")
        lines += ["    " + ln if ln else "" for ln in describe_failure(r)]
    more = failures[MAX_DETAILED:MAX_DETAILED + MAX_LISTED]
    if more:
        lines.append("  - also failed: " + ", ".join(f"`{test_label(r)}`" for r in more)
                     + (" ..." if len(failures) > MAX_DETAILED + MAX_LISTED else ""))
    lines.append(f"  - hint: {hint(c.item.claim)}")
    lines.append(f"  - reproduce: `pytest --impl {grade.run.entry} --claim {c.item.claim}` in the repository")
    lines.append(f"  - read: {link(grade, c.item.claim)}")
    return lines


def claim_text(grade: Grade, c: ClaimGrade) -> str:
    """A claim's section as plain text, for Gradescope's per-test output."""
    return "\n".join(re.sub(r"\*\*(.+?)\*\*", r"\1", ln) for ln in claim_section(grade, c))


def summary_lines(grade: Grade) -> list[str]:
    run, impl = grade.run, grade.run.implementation or {}
    lines = [f"**Score: {grade.score:.4g} / {grade.max_score:.4g}**", ""]
    if run.load_error:
        lines += ["Your file could not be imported, so no claim could be checked:", "```", run.load_error, "```", ""]
    elif impl:
        lines.append(f"Graded `{run.entry}`: backend {impl.get('backend')}, dtypes {', '.join(impl.get('dtypes', []))}.")
        if impl.get("unavailable"):
            lines.append(f"It could not run here: {impl['unavailable']}")
        lines.append("")
    for note in run.notes:
        lines += [f"Note: {note}", ""]
    counts = {s: sum(1 for c in grade.claims if c.status == s) for s in
              ("passed", "partly passed", "failed", "not implemented", "not run", "not applicable")}
    lines.append("Claims: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + ".")
    return lines


def markdown(grade: Grade) -> str:
    lines = [f"# Feedback for {grade.run.name}", ""] + summary_lines(grade) + [""]
    hidden = 0
    chapters = catalogue.chapters()
    scores = grade.chapters()
    for chapter, (got, most) in scores.items():
        lines += [f"## {chapters[chapter]['title']}: {got:.4g} / {most:.4g}", ""]
        for c in grade.claims:
            if c.item.chapter != chapter:
                continue
            if c.item.visibility != "visible":
                hidden += 1
                continue
            lines += claim_section(grade, c)
        lines.append("")
    if hidden:
        lines += [f"{hidden} more claim(s) are graded but not shown here yet.", ""]
    return "\n".join(lines).rstrip() + "\n"
