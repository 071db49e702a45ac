"""docs/conformance.md: implementation x claim, from a pytest `--spec-report` JSON (spec_tests/harness/report.py)."""

from __future__ import annotations

import html
import json
from collections import Counter, defaultdict
from pathlib import Path

from docs_gen import GENERATED_NOTE
from docs_gen.claims_pages import text
from docs_gen.mathtext import rich_html
from spec_tests.harness import claims as catalogue

# status (report.py) -> (cell text, css class)
CELLS = {
    "passed": ("pass", "pass"),
    "failed": ("FAIL", "fail"),
    "expected failure": ("xfail", "xfail"),
    "not implemented": ("not impl", "notimpl"),
    "partly implemented": ("partial", "notimpl"),
    "not applicable": ("n/a", "na"),
    "out of scope": ("scope", "na"),
    "unavailable": ("unavail", "unavail"),
    "skipped": ("skip", "na"),
}
LEGEND = [
    ("passed", "every test of the claim passed, in every dtype the implementation declares"),
    ("failed", "at least one test failed: the implementation breaks the claim"),
    ("expected failure", "a known, documented failure (`spec_tests/xfail/<implementation>.txt`), with its reason below"),
    ("not implemented", "the implementation lacks the function (or it raises NotImplementedError)"),
    ("partly implemented", "some of the claim's tests need a function or keyword it lacks"),
    ("not applicable", "the claim does not apply (for instance, gradients of a NumPy implementation)"),
    ("unavailable", "the implementation cannot run on the machine of this run (a missing package or GPU)"),
]


def current_commit() -> str:
    """The checkout's commit, and whether code differed from it (generated docs do not count)."""
    import subprocess

    from docs_gen import ROOT

    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    sha = git("rev-parse", "--short=12", "HEAD")
    if not sha:
        return "not recorded (not a git checkout)"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs", ":!docs_gen/fragments")
    return sha + (" with uncommitted changes" if dirty else "")


def cell(status: str | None) -> str:
    if status is None:
        return '<span class="spec-cell spec-none">-</span>'
    label, css = CELLS.get(status, (status, "na"))
    return f'<span class="spec-cell spec-{css}" title="{status}">{label}</span>'


def render(report: dict, source: str = "a pytest --spec-report JSON", command: str | None = None) -> str:
    # Implementations that ran first, then those this machine could not run (a GPU, a missing package).
    declared = report.get("implementations", {})
    impls = sorted(declared, key=lambda i: bool(declared[i].get("unavailable")))
    # A wide table: the page gives it the navigation column's room.
    out = ["---", "hide:", "  - navigation", "  - toc", "---", "", GENERATED_NOTE.format(source=source), "",
           "# Conformance matrix", ""]
    out += ["Every implementation under `impls/` against every claim of the specification, from one real run",
            "of the suite. A claim's cell combines all its tests over all the dtypes the implementation declares.",
            "Claim IDs link to the chapter that states them.", ""]
    out += run_summary(report, command) + implementations_table(report) + legend(report.get("claims", {}))
    out += claims_matrix(report.get("claims", {}), impls)
    out += outcomes_section("Expected failures", _by_message(report, "expected failure"),
                            "Known failures, each declared in `spec_tests/xfail/<implementation>.txt` with its reason:")
    out += outcomes_section("Failures", _by_message(report, "failed"),
                            "Tests that failed in this run, with the first line of their message:")
    return "\n".join(out).rstrip() + "\n"


def run_summary(report: dict, command: str | None) -> list[str]:
    """The "This run" box: date, commit, command, machine, versions, and the tests run by outcome."""
    machine, versions = report.get("machine", {}), report.get("versions", {})
    out = ['!!! abstract "This run"', ""]
    out.append(f"    - **Date:** {report.get('created', '?')}")
    out.append(f"    - **Commit:** {'`' + report['commit'] + '`' if report.get('commit') else 'not recorded'}")
    if command:
        out.append(f"    - **Command:** `{command}`")
    out.append(f"    - **Machine:** {text(machine.get('platform', '?'))}, {machine.get('processor', '?')}, "
               f"{machine.get('cpus', '?')} CPUs")
    out.append("    - **Versions:** " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    n_tests = len(report.get("tests", []))
    counts = Counter(t["outcome"] for t in report.get("tests", []))
    out.append(f"    - **Tests run:** {n_tests} (" + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) + ")")
    return out + [""]


def implementations_table(report: dict) -> list[str]:
    """One row per implementation: what it declares, and its claims passed, not passed, not applicable."""
    table: dict[str, dict[str, str]] = report.get("claims", {})
    out = ["## Implementations", "",
           "*Applicable* claims are those a run could check; a claim that does not apply to an implementation",
           "(gradients of a NumPy one, a GPU kernel's claims on a CPU) is counted apart, never as a failure.", "",
           "| implementation | backend | device | dtypes | passed | not passed | not applicable | state |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, info in report.get("implementations", {}).items():
        statuses = [per.get(name) for per in table.values() if per.get(name)]
        na = sum(s == "not applicable" for s in statuses)
        applicable = [s for s in statuses if s != "not applicable"]
        passed = sum(s == "passed" for s in applicable)
        counts = f"{passed} of {len(applicable)} | {len(applicable) - passed} | {na}"
        state = f"unavailable: {text(info['unavailable'])}" if info.get("unavailable") else "ran"
        if info.get("unavailable") and not info.get("path"):  # never imported: what it declares is unknown
            out.append(f"| `{name}` | - | - | - | {counts} | {state} |")
            continue
        out.append(f"| `{name}` | {info.get('backend', '?')} | {info.get('device', '?')} | "
                   f"{', '.join(info.get('dtypes', []))} | {counts} | {state} |")
    return out + [""]


# Shown only when a run has the status: a declaration of adapters (adapters/), rare in impls/.
SCOPE_LEGEND = ("out of scope", "the implementation declares every input of the claim's tests outside what it can "
                "express (`OutOfScope`, CONTRACT.md): not applicable to it, by its own declaration")


def legend(table: dict | None = None) -> list[str]:
    out = ["## Legend", ""]
    seen = {s for per in (table or {}).values() for s in per.values()}
    for status, meaning in LEGEND + ([SCOPE_LEGEND] if SCOPE_LEGEND[0] in seen else []):
        out.append(f"- {cell(status)} {meaning}")
    return out + [f"- {cell(None)} no test of this claim ran for this implementation (the claim has no test yet)", ""]


def claims_matrix(table: dict[str, dict[str, str]], impls: list[str]) -> list[str]:
    """Claim x implementation, one HTML table per chapter, and the report's claims the catalogue lacks."""
    chapters, claims = catalogue.chapters(), catalogue.catalogue()
    out = ["## Claims", "",
           "Each row gives the claim's short statement; hover over it (or open the claim's link) for the",
           "full statement.", ""]
    heads = "".join(f'<th class="spec-impl"><span title="{i}">{i}</span></th>' for i in impls)
    for ch in chapters.values():
        mine = [c for c in claims.values() if c.chapter == ch.id]
        if not mine:
            continue
        # An HTML table: narrow status columns under
        # vertical implementation names, so the matrix fits the page's width.
        out += [f"### {ch.title}", "", '<div class="spec-scroll">', '<table class="spec-matrix">',
                f'<thead><tr><th>claim</th><th>statement</th>{heads}</tr></thead>', "<tbody>"]
        for c in mine:
            per = table.get(c.id, {})
            cells = "".join(f"<td>{cell(per.get(i))}</td>" for i in impls)
            full = html.escape(" ".join(c.statement.split()), quote=True)
            page = ch.page.removesuffix(".md") + ".html"  # raw HTML: MkDocs does not rewrite its links
            out.append(f'<tr><td><a href="{page}#{c.anchor}">{c.id}</a></td>'
                       f'<td class="spec-statement" title="{full}">{rich_html(c.summary)}</td>{cells}</tr>')
        out += ["</tbody>", "</table>", "</div>", ""]
    unknown = sorted(set(table) - set(claims))
    if unknown:
        out += ["Claims in the report but not in `spec_tests/claims.toml`: " + ", ".join(unknown), ""]
    return out


def outcomes_section(title: str, grouped: dict, lead: str) -> list[str]:
    """A section of the tests of one outcome, grouped by implementation, test and message; or "None"."""
    out = [f"## {title}", ""]
    if grouped:
        return out + [lead, ""] + _message_table(grouped)
    return out + ["None in this run.", ""]


def _by_message(report: dict, outcome: str) -> dict[tuple[str, str, str], list[str]]:
    """(implementation, test, first line of message) -> dtypes, for one outcome."""
    grouped: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for t in report.get("tests", []):
        if t["outcome"] == outcome:
            first = next((ln.strip() for ln in t.get("message", "").splitlines() if ln.strip()), "")
            grouped[(t["impl"], t["test"], first[:200])].append(t.get("dtype", ""))
    return grouped


def _message_table(grouped) -> list[str]:
    rows = ["| implementation | test | dtypes | message |", "| --- | --- | --- | --- |"]
    for (impl, test, msg), dtypes in sorted(grouped.items()):
        rows.append(f"| `{impl}` | `{test}` | {', '.join(sorted(set(dtypes)))} | {text(msg)} |")
    return rows + [""]


def write(report_path: Path, page: Path, command: str | None = None) -> Path:
    report = json.loads(report_path.read_text(encoding="utf-8"))
    page.write_text(render(report, source=f"the spec report {report_path.name}", command=command), encoding="utf-8")
    return page
