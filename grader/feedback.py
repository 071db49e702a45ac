"""feedback.md: the learner's report, written to be read to the end.

    # Feedback for NAME
    Score (left out when the rubric hides some claims), the file graded, notes.
    ## What to fix
    ### 1. <one cause>            one failure of it in full: the check, the input with its values
                                  (when small), expected against seen, the likely cause when it
                                  matches a known bug; a hint chosen by the kind of failure; the
                                  claims it costs, each with the section of the textbook to read
    ### 2. ...
    ## By chapter                 each visible claim: status and points, and which cause it has

Failures are grouped by cause, so one bug is reported once with the claims it affects listed
under it. The cause of a failure is, in this order: a required dtype the submission does not
declare; a function not written yet; a function the rubric does not allow; a call that ran out of
time; a known bug (spec_tests/harness/diagnosis.py: named for this claim, or named for another claim
and explaining this failure too, which is the same cause); results right to only a few digits in float64
(a computation in lower precision); an exception on valid input; otherwise the function whose
values are wrong, or the first line of the message. Wrong values of a function that also has a
known bug diagnosed (in another dtype, say) are counted under that known bug.

What a student can see before the due date holds nothing of a claim that is not `visible`: no
total, no subtotal of a chapter with such a claim, no count that includes one, no cause found
only by such a claim. Gradescope's per-test output (claim_text) names the claim's causes in a
line each; the details are given once, in the top-level output.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from grader import score as score_mod
from grader.score import ClaimGrade, Grade
from spec_tests.harness import claims as catalogue
from spec_tests.harness.loader import CONTRACT_FUNCTIONS

HINTS = Path(__file__).resolve().parent / "hints.toml"
MAX_CAUSES = 8  # causes described in full; the rest are listed in a line each
MAX_TESTS = 4  # failing tests named under a cause
MAX_VALUES = 700  # characters of input values shown; larger inputs are shown by their shapes
FUNCTIONS = CONTRACT_FUNCTIONS + ("rotary_embedding", "t5_relative_position_bucket", "layer_norm_backward",
                                  "scaled_dot_product_attention_backward")
EXAMPLE = re.compile(r"^(Falsifying|Failing)( explicit)? (example|test case)")
KEYS = ("check", "input", "problem", "likely cause", "looks like")
# The diagnosis's line for a failure explained by a bug it named for another claim (diagnosis.NAMED)
ALREADY_NAMED = re.compile(r"^the known bug already named for [A-Z0-9, -]+? explains this failure too: ")
HEADER = re.compile(r"^[A-Z]+-\d+ does not hold")
ERROR = re.compile(r"largest error ([0-9.eE+-]+)")  # a long message may be cut after it


@cache
def hints() -> dict:
    with open(HINTS, "rb") as f:
        return tomllib.load(f)


def hint(claim_id: str) -> str:
    return hints()["hints"].get(claim_id) or catalogue.get(claim_id).statement


def kind_hint(kind: str, fn: str = "") -> str:
    """The hint for a kind of failure (hints.toml [kinds]); '' when the claim's own hint fits better."""
    return hints().get("kinds", {}).get(kind, "").replace("{function}", fn or "the function")


def link(grade: Grade, claim_id: str) -> str:
    doc = catalogue.get(claim_id).doc  # docs/<page>#<anchor>
    base = grade.rubric.docs_url
    return base.rstrip("/") + "/" + doc.removeprefix("docs/").replace(".md#", "/#") if base else doc


def test_label(record: dict) -> str:
    """test_name[params], without the implementation's name: test_output_shape[float64-self-2x4x64]."""
    nodeid = record.get("nodeid", "")
    params = nodeid.partition("[")[2].rstrip("]")
    impl = record.get("impl", "")
    if impl and params.startswith(impl + "-"):
        params = params[len(impl) + 1:]
    return f"{record['test']}[{params}]" if params and not record.get("kind") else record["test"]


# -- causes ---------------------------------------------------------------------------------------

@dataclass
class Cause:
    kind: str  # dtype, not implemented, banned, time, known bug, precision, exception, values, other
    title: str
    example: dict  # the failure described in full
    claims: list[str] = field(default_factory=list)
    tests: list[str] = field(default_factory=list)
    function: str = ""


def _function(text: str) -> str:
    """The contract function a message is about: the first one named in its check or input line."""
    for line in text.splitlines():
        if line.strip().startswith(("check:", "input:")):
            found = re.findall(r"\b([a-z_]+)\(", line)
            for name in found:
                if name in FUNCTIONS:
                    return name
    for name in re.findall(r"\b([a-z_]+)\b", text):
        if name in FUNCTIONS:
            return name
    return ""


def classify(record: dict) -> tuple[tuple, str, str, str]:
    """(key, kind, title, function) of one failure: failures with the same key share a cause."""
    message = record.get("message") or ""
    fn = _function(message)
    shown = f"`{fn}`" if fn else "a function"
    if record.get("kind") == score_mod.MISSING_DTYPE:
        dtype = record["dtype"]
        return ("dtype", dtype), "dtype", f"`DTYPES` leaves out {dtype}, which the rubric requires", ""
    if record["outcome"] == "not implemented":
        keyword = re.search(r"takes no keyword (\w+)", message)
        if keyword:
            return (("not implemented", fn, keyword.group(1)), "not implemented",
                    f"{shown} does not take the keyword `{keyword.group(1)}` yet", fn)
        return ("not implemented", fn), "not implemented", f"{shown} is not written yet", fn
    if "which the rubric does not allow" in message:
        used = re.search(r"the call used (.+?), which the rubric", message)
        name = used.group(1) if used else "a function"
        return ("banned", name), "banned", f"the call used {name}, which the rubric does not allow", fn
    if record["outcome"] != "failed":
        first = message.strip().splitlines()[0][:120] if message.strip() else ""
        return ("other", record["outcome"], first), "other", f"{record['outcome']}: {first}".rstrip(": "), fn
    if re.search(r"did not return|ran past|time limit|test_timeout|timed out", message):
        return ("time", fn), "time", f"{shown} did not return in time", fn
    cause = re.search(r"likely cause: (.+)", message)
    if cause:  # a bug named here, or one named for another claim that explains this failure too: one cause
        text = ALREADY_NAMED.sub("", cause.group(1).strip().removeprefix("this matches a known bug: "))
        return ("known bug", text), "known bug", f"this matches a known bug: {text}", fn
    error = ERROR.search(message)
    if error and record.get("dtype") == "float64":
        try:
            largest = float(error.group(1))
        except ValueError:
            largest = 1.0
        if largest < 1e-4:
            return (("precision", "float64"), "precision",
                    f"float64 results are right to about {max(1, round(-math.log10(max(largest, 1e-16))))} "
                    "digits only", fn)
    raised = re.search(r"raised (\w+(Error|Exception|Interrupt|Exit)?)\b", message)
    if raised and "returns a result" in message:
        return ("exception", fn, raised.group(1)), "exception", f"{shown} raised {raised.group(1)} on valid input", fn
    if error:
        return ("values", fn), "values", f"{shown} returns wrong values", fn
    if " does not hold" not in message:
        err = _error(message.splitlines())
        last = err[-1] if err else message.strip()[:100]
        return ("error", fn, last[:100]), "exception", f"the test stopped with an error: {last[:100]}", fn
    check = re.search(r"check: (.+)", message)
    text = check.group(1).strip() if check else message.strip().splitlines()[-1][:100]
    return ("check", text), "values", f"this check fails: {text}", fn


def _names_more(record: dict, example: dict) -> bool:
    """Is `record` the better example of its cause: it names the cause where `example` does not, or names it
    itself where `example` only refers to the bug named for another claim?"""
    def rank(r: dict) -> int:
        message = r.get("message") or ""
        return 2 if "likely cause: this matches a known bug:" in message else 1 if "likely cause:" in message else 0
    return rank(record) > rank(example)


def causes(grade: Grade, visible_only: bool = True) -> list[Cause]:
    """The failures of the (visible) claims grouped by cause, the cause costing most points first."""
    found: dict[tuple, Cause] = {}
    cost: dict[tuple, float] = {}
    for c in grade.claims:
        if visible_only and c.item.visibility != "visible":
            continue
        for r in c.failures:
            key, kind, title, fn = classify(r)
            cause = found.get(key)
            if cause is None:
                cause = found[key] = Cause(kind, title, r, function=fn)
                cost[key] = 0.0
            if c.item.claim not in cause.claims:
                cause.claims.append(c.item.claim)
                cost[key] += c.max_score - c.score
            label = test_label(r)
            if label not in cause.tests:
                cause.tests.append(label)
            if _names_more(r, cause.example):
                cause.example = r
    # A function with a diagnosed known bug whose other failures were not diagnosed (the diagnosis
    # matched in one dtype, not the other): one bug, most likely; its failures join the known bug.
    for key, cause in list(found.items()):
        if cause.kind != "values" or not cause.function:
            continue
        known = [k for k, c in found.items() if c.kind == "known bug" and c.function == cause.function]
        if known:
            target = found[known[0]]
            target.claims += [c for c in cause.claims if c not in target.claims]
            target.tests += [t for t in cause.tests if t not in target.tests]
            cost[known[0]] += cost.pop(key)
            del found[key]
    return [found[k] for k in sorted(found, key=lambda k: -cost[k])]


def claim_causes(c: ClaimGrade) -> list[str]:
    """The titles of one claim's causes, in order."""
    out = []
    for r in c.failures:
        title = classify(r)[2]
        if title not in out:
            out.append(title)
    return out


# -- one failure, in full --------------------------------------------------------------------------

def describe_failure(record: dict) -> list[str]:
    """A failed test's message as feedback lines (Markdown)."""
    outcome, message = record["outcome"], (record.get("message") or "").strip()
    if record.get("kind") == score_mod.MISSING_DTYPE:
        return [message]
    if outcome == "not implemented":
        return [f"not implemented: {message.removeprefix('not implemented: ')}"]
    if outcome != "failed":
        return [f"{outcome}: {message}" if message else outcome]
    lines = message.splitlines()
    if lines and " does not hold" in lines[0]:  # the suite's own feedback (check.py, isolation.py)
        return _spec_feedback(lines)
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
    """Hypothesis's smallest failing input, as a code block (the suite's own parameters left out)."""
    for i, ln in enumerate(lines):
        if EXAMPLE.match(ln.lstrip("E").strip()):
            block = [x[1:] if x.startswith("E") else x for x in lines[i + 1:i + 40]]
            end = next((j for j, x in enumerate(block) if x.strip() == ")"), len(block))
            kept = [x.rstrip() for x in block[:end] if not x.strip().startswith(("impl=", "seed="))]
            return ["smallest failing input found:", "```text", *kept, "```"] if kept else []
    return []


def _tidy(code: str) -> str:
    """np.array2string's column padding removed: `[ 0.5 , -1. ]` -> `[0.5, -1.]`."""
    code = re.sub(r"\s+", " ", code.strip())
    return re.sub(r"\s+(?=[,\]])", "", re.sub(r"(?<=\[)\s+", "", code))


def _values(snippet: list[str]) -> list[str]:
    """The input values of a reproduction snippet (`q = np.array(...)` statements), when they are small."""
    statements: list[list[str]] = []
    depth = 0
    for ln in snippet:
        text = ln.strip()
        if depth > 0:
            statements[-1].append("    " + _tidy(text))
        elif re.match(r"\w+ = (np\.array\(|\{|-?[\d.]+$|True$|False$|None$)", text) and "data[" not in text:
            statements.append([_tidy(text)])
        else:
            continue
        depth += text.count("(") + text.count("[") + text.count("{") - text.count(")") - text.count("]") - text.count("}")
    values = [ln for st in statements for ln in st]
    return values if values and sum(map(len, values)) <= MAX_VALUES else []


def _spec_feedback(lines: list[str]) -> list[str]:
    keyed, details, rest, snippet = [], [], [], []
    section = "main"
    for ln in lines:
        stripped = ln.strip()
        if HEADER.match(stripped) or stripped.startswith("implementation:"):
            continue
        if stripped.startswith("reproduce (paste into Python)"):
            section = "snippet"
            continue
        if stripped.startswith("read:"):
            section = "skip"
            continue
        if EXAMPLE.match(stripped):
            section = "example"
        if section in ("snippet", "skip") and ln.startswith("      "):
            if section == "snippet":
                snippet.append(ln)
            continue
        if section in ("snippet", "skip"):
            section = "main"
        if section == "example":
            rest.append(ln)
            continue
        key, _, value = stripped.partition(": ")
        if key in KEYS and value:
            keyed.append(f"**{key}**: {value}")
        elif stripped:
            details.append(ln[2:] if ln.startswith("  ") else ln)
    values = _values(snippet)
    out = keyed[:2]
    if values:
        out += ["the input's values:", "```python", *values, "```"]
    out += (["```text", *details, "```"] if details else []) + keyed[2:]
    return out + ([] if values else _example(rest))


# -- the report ------------------------------------------------------------------------------------

def _visible(c: ClaimGrade) -> bool:
    return c.item.visibility == "visible"


def cause_section(grade: Grade, n: int, cause: Cause) -> list[str]:
    lines = [f"### {n}. {cause.title[0].upper()}{cause.title[1:]}", ""]
    claims = [grade_claim for grade_claim in grade.claims if grade_claim.item.claim in cause.claims]
    more = len(cause.tests) - MAX_TESTS
    lines.append(f"It fails {len(cause.tests)} test(s): " + ", ".join(f"`{t}`" for t in cause.tests[:MAX_TESTS])
                 + (f" and {more} more." if more > 0 else "."))
    lines.append("")
    if cause.kind not in ("dtype", "not implemented", "banned"):
        lines.append(f"One of them, `{test_label(cause.example)}`:")
        lines.append("")
        lines += describe_failure(cause.example)
        lines.append("")
    elif cause.kind == "dtype":
        lines += [describe_failure(cause.example)[0], ""]
    advice = kind_hint(cause.kind, cause.function)
    if not advice or cause.kind in ("values", "known bug"):
        advice = hint(cause.claims[0])
    lines += [f"**Hint**: {advice}", "", "Claims it costs points on:", ""]
    for c in claims:
        lines.append(f"- **{c.item.claim}** {c.claim.summary} ({c.score:.2f} / {c.max_score:.2f}): read "
                     f"{link(grade, c.item.claim)}")
    lines.append("")
    return lines


def summary_lines(grade: Grade) -> list[str]:
    run, impl = grade.run, grade.run.implementation or {}
    lines = []
    if grade.hidden:
        lines += ["Some claims are graded but hidden until the due date or until grades are published, so your "
                  "total is not shown here. The points below are those of the claims you can see.", ""]
    else:
        lines += [f"**Score: {grade.score:.2f} / {grade.max_score:.2f}**", ""]
    if run.load_error:
        lines += [f"Your file `{run.entry}` could not be imported, so no claim could be checked:", "```text",
                  run.load_error, "```", ""]
    elif impl:
        lines.append(f"Graded `{run.entry}`: backend {impl.get('backend')}, dtypes {', '.join(impl.get('dtypes', []))}.")
        if impl.get("unavailable"):
            lines.append(f"It could not run here: {impl['unavailable']}")
        lines.append("")
        for note in impl.get("notes") or []:  # a notebook's skipped lines, stopped or failing cells
            lines += [f"Note: {note}", ""]
    for note in run.notes:
        lines += [f"Note: {note}", ""]
    shown = [c for c in grade.claims if _visible(c)]
    counts = {s: sum(1 for c in shown if c.status == s) for s in
              ("passed", "partly passed", "failed", "not implemented", "not run", "not applicable", "out of scope")}
    lines.append(("Claims shown here: " if grade.hidden else "Claims: ")
                 + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + ".")
    if counts["not applicable"]:
        lines.append("A claim *not applicable* to your dtypes earns its points: none of its checks apply.")
    return lines


def _chapter_line(grade: Grade, chapter: str, title: str, got: float, most: float) -> str:
    members = [c for c in grade.claims if c.item.chapter == chapter]
    if all(_visible(c) for c in members):
        return f"### {title}: {got:.2f} / {most:.2f}"
    return f"### {title}"


def markdown(grade: Grade) -> str:
    """The student's feedback (also results.json's top-level output)."""
    lines = [f"# Feedback for {grade.run.name}", ""] + summary_lines(grade) + [""]
    found = causes(grade)
    if found:
        lines += ["## What to fix", "",
                  f"{len(found)} cause(s), the one that costs most points first. Each is described once, "
                  "with the claims it affects.", ""]
        for n, cause in enumerate(found[:MAX_CAUSES], 1):
            lines += cause_section(grade, n, cause)
        for n, cause in enumerate(found[MAX_CAUSES:], MAX_CAUSES + 1):
            lines.append(f"{n}. {cause.title} ({', '.join(cause.claims)})")
        if found[MAX_CAUSES:]:
            lines.append("")
    numbers = {id(c): n for n, c in enumerate(found, 1)}
    chapters = catalogue.chapters()
    lines += ["## By chapter", ""]
    hidden_somewhere = False
    for chapter, (got, most) in grade.chapters().items():
        members = [c for c in grade.claims if c.item.chapter == chapter]
        if not any(_visible(c) for c in members):
            hidden_somewhere = True
            continue
        lines += [_chapter_line(grade, chapter, chapters[chapter].title, got, most), ""]
        for c in members:
            if not _visible(c):
                hidden_somewhere = True
                continue
            line = f"- **{c.item.claim}** {c.claim.summary}: {c.status}, {c.score:.2f} / {c.max_score:.2f}"
            mine = [numbers[id(k)] for k in found if c.item.claim in k.claims]
            if mine:
                line += " (cause " + ", ".join(map(str, mine)) + ")"
            elif c.status == "not run":
                line += " (no test of it ran: see the notes at the top)"
            lines.append(line)
        lines.append("")
    if hidden_somewhere:
        lines += ["More claims are graded but not shown here yet.", ""]
    if grade.leaderboard is not None:  # the rubric's optional leaderboard (grader/leaderboard.py)
        lines += [grade.leaderboard.text(), ""]
    lines += ["Run a claim's tests yourself from the repository: "
              f"`pytest --impl {grade.run.entry} --claim ID`.", ""]
    return "\n".join(lines).rstrip() + "\n"


def claim_section(grade: Grade, c: ClaimGrade) -> list[str]:
    """Gradescope's output for one claim: its status and points, its causes in a line each, where to read."""
    lines = [f"**{c.item.claim}** {c.claim.summary}: {c.status}, {c.score:.2f} / {c.max_score:.2f}"]
    if c.status == "not applicable":
        lines.append("None of its checks apply to the dtypes your file declares; it earns its points.")
    if c.status in ("passed", "not applicable"):
        return lines
    if c.status == "not run":
        return lines + ["No test of this claim ran (see the note at the top of the feedback)."]
    if c.status == "out of scope":
        return lines + ["Your file declares every input of this claim's tests out of its scope (OutOfScope): "
                        "nothing of it was judged, and a declaration earns no points.", f"Read: {link(grade, c.item.claim)}"]
    for title in claim_causes(c):
        lines.append(f"- {title}")
    n = len(c.failures)
    lines.append(f"{n} test(s) of it failed; the feedback at the top describes each cause once, with an example.")
    lines.append(f"Hint: {hint(c.item.claim)}")
    lines.append(f"Read: {link(grade, c.item.claim)}")
    return lines


def claim_output(grade: Grade, c: ClaimGrade) -> str:
    """Gradescope's per-test output for one claim (Markdown)."""
    return "\n".join(claim_section(grade, c))


def claim_text(grade: Grade, c: ClaimGrade) -> str:
    """A claim's section as plain text."""
    return "\n".join(re.sub(r"\*\*(.+?)\*\*", r"\1", ln) for ln in claim_section(grade, c))
