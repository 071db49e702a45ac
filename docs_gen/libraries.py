"""docs/libraries.md: the libraries people use (adapters/), judged by the spec, from a real run.

    python -m docs_gen.libraries run --out .artifacts/libraries     # run the spec on every adapter, probe
                                                                    # the questions, write libraries.json
                                                                    # and libraries.md there
    python -m docs_gen.libraries render JSON [PAGE]                 # the page from a run's JSON
    python -m docs_gen.libraries --check                            # docs/libraries.md is the render of the
                                                                    # committed run (docs_gen/data/libraries.json),
                                                                    # and the questions' answers of the installed
                                                                    # libraries are the committed ones

The run (a spec report per adapter: `pytest --impl adapter:NAME --spec-report ...`) gives the claims x
libraries matrix and the deviations; the questions' answers come from docs_gen/library_probes.py, the
smallest input that shows each, and are deterministic for given library versions.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from docs_gen import GENERATED_NOTE, ROOT
from docs_gen.claims_pages import text
from docs_gen.conformance import claims_matrix, current_commit, legend
from docs_gen.library_probes import QUESTIONS, probe
from spec_tests.harness import claims as catalogue
from spec_tests.harness.loader import adapter_names

PAGE = ROOT / "docs" / "libraries.md"
DATA = ROOT / "docs_gen" / "data" / "libraries.json"
PACKAGES = {"pytorch": "torch", "hf": "transformers", "jax": "jax", "onnx": "onnx", "torchtune": "torchtune",
            "xtransformers": "x-transformers"}  # an adapter's name prefix -> its package


# Libraries the issue asked for that have no adapter here, and why (shown under the libraries table).
NOT_ADAPTED = {
    "timm (`timm.layers.Attention`)": "timm (1.0.31) imports torchvision when it is imported (`torchvision.ops` in "
                                      "`timm.layers`), and torchvision 0.28.0, the release for torch 2.13.0, installs "
                                      "beside the pinned CPU build of torch (`pip install --no-deps`) but does not "
                                      "import: its compiled operators need CUDA's `libc10_cuda.so`, and without them "
                                      "`import torchvision` raises `RuntimeError: operator torchvision::nms does not "
                                      "exist` (PyPI has no CPU build of torchvision)",
}


def package_of(adapter: str) -> str:
    return PACKAGES.get(adapter.split("_", 1)[0], "?")


def version_of(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def entry_point(adapter: str) -> str:
    """The first sentence of the adapter's docstring: the library's entry point, in words."""
    path = ROOT / "adapters" / f"{adapter}.py"
    import ast

    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or adapter
    return " ".join(doc.split("\n\n")[0].split())


def run_adapter(adapter: str, out: Path, examples: int | None) -> dict:
    """One adapter's spec run: its report's claims and failures, and the seconds it took."""
    report = out / f"{adapter}.json"
    env = dict(os.environ, CI="1")
    if examples:
        env["MHA_SPEC_EXAMPLES"] = str(examples)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "--impl", f"adapter:{adapter}", "-q", "-p", "no:cacheprovider",
                           "-n", "2", "--no-claim-summary", "--spec-report", str(report)], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    (out / f"{adapter}.log").write_text(proc.stdout[-200000:] + proc.stderr[-20000:], encoding="utf-8")
    if proc.returncode not in (0, 1) or not report.is_file():  # 1: claims failed; 5: no test ran; else: broke
        return {"seconds": round(seconds, 1), "error": f"pytest exit {proc.returncode}: " + (proc.stdout + proc.stderr)[-500:],
                "claims": {}, "failures": []}
    doc = json.loads(report.read_text(encoding="utf-8"))
    claims = {cid: per.get(adapter) for cid, per in doc.get("claims", {}).items() if per.get(adapter)}
    return {"seconds": round(seconds, 1), "claims": claims, "failures": failures(doc, adapter),
            "unavailable": doc.get("implementations", {}).get(adapter, {}).get("unavailable")}


KEEP = ("check:", "input:", "expected", "seen", "raised", "largest error", "likely cause")


def failures(doc: dict, adapter: str) -> list[dict]:
    """The first failing test of each claim, its message cut to the lines that tell it."""
    out, seen = [], set()
    for t in doc.get("tests", []):
        if t["outcome"] != "failed" or t["impl"] != adapter:
            continue
        claim = t["claims"][0] if t["claims"] else "?"
        if claim in seen:
            continue
        seen.add(claim)
        lines = [ln.strip() for ln in t.get("message", "").splitlines() if ln.strip().startswith(KEEP)]
        out.append({"claim": claim, "test": t["test"], "dtype": t["dtype"], "lines": [ln[:240] for ln in lines[:6]]})
    return out


def run(out: Path, adapters: list[str], examples: int | None) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    doc = {"created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": current_commit(), "examples": examples,
           "versions": {p: version_of(p) for p in sorted(set(PACKAGES.values()))}, "adapters": {}}
    for adapter in adapters:
        entry = run_adapter(adapter, out, examples)
        entry["probes"] = probe(adapter)
        doc["adapters"][adapter] = entry
        print(f"{adapter}: {entry['seconds']} s", flush=True)
    (out / "libraries.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return doc


# ------------------------------------------------------------------------------------------- the page
def render(doc: dict, source: str = "a run of docs_gen.libraries") -> str:
    adapters = list(doc["adapters"])
    out = ["---", "hide:", "  - navigation", "  - toc", "---", "", GENERATED_NOTE.format(source=source), "",
           "# Popular libraries, judged by the spec", ""]
    out += ["The libraries people use for attention disagree, silently, on what users ask about most: which way",
            "causal is aligned when L_q != L_k, what a query that sees no key returns, whether True in a mask",
            "means keep or hide, how grouped-query attention maps heads. Each library's entry point is run here",
            "through a thin adapter (`adapters/`: layout, mask polarity and weight orientation converted as its",
            "documentation asks, nothing corrected), against every claim of the spec. What a library cannot",
            "express, its adapter declares *out of scope* (CONTRACT.md, \"Declared scope\"); a FAIL is a genuine",
            "difference from the contract, shown below on the smallest input that shows it.", ""]
    out += ['!!! abstract "This run"', "", f"    - **Date:** {doc['created']}", f"    - **Commit:** `{doc['commit']}`",
            "    - **Command:** `python -m docs_gen.libraries run`"
            + (f" (MHA_SPEC_EXAMPLES={doc['examples']})" if doc.get("examples") else ""),
            "    - **Versions:** " + ", ".join(f"{p} {v}" for p, v in doc["versions"].items()), ""]
    out += libraries_table(doc) + questions(doc, adapters)
    table: dict[str, dict[str, str]] = {}
    for adapter, entry in doc["adapters"].items():
        for cid, status in entry["claims"].items():
            table.setdefault(cid, {})[adapter] = status
    out += legend(table) + claims_matrix(table, adapters) + deviations(doc)
    return "\n".join(out).rstrip() + "\n"


def libraries_table(doc: dict) -> list[str]:
    out = ["## Libraries", "", "| adapter | entry point | version | run (s) | passed | failed | out of scope | n/a |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for adapter, entry in doc["adapters"].items():
        s = list(entry["claims"].values())
        pkg = package_of(adapter)
        out.append(f"| `{adapter}` | {text(entry_point(adapter))} | {pkg} {doc['versions'].get(pkg, '?')} | "
                   f"{entry['seconds']} | {s.count('passed')} | {s.count('failed')} | {s.count('out of scope')} | "
                   f"{s.count('not applicable')} |")
    out.append("")
    for library, why in NOT_ADAPTED.items():
        out += [f"Not adapted: {library}: {why}.", ""]
    return out


def _claim_link(cid: str) -> str:
    try:
        c = catalogue.get(cid)
    except KeyError:
        return cid
    return f"[{cid}]({catalogue.chapters()[c.chapter].page}#{c.anchor})"


def _value(seen: str) -> str:
    """Values as code (`[1., 1.]`), words as text."""
    return f"`{seen}`" if seen.startswith("[") else text(seen)


def questions(doc: dict, adapters: list[str]) -> list[str]:
    out = ["## The questions users ask", "",
           "Each answer is the library's output on the smallest input that shows it, in float64. Unless said",
           "otherwise q = k = 0, so that every visible key has the same weight, and v = [[1], [3]]: an output of",
           "1 means key 0 alone was seen, 3 key 1 alone, 2 both.", ""]
    for qid, (title, fn, claim, contract) in QUESTIONS.items():
        doc_text = " ".join((fn.__doc__ or "").split())
        out += [f"### {text(title)}", "", f"{text(doc_text)} Bears on {_claim_link(claim)}; the contract: {text(contract)}.", "",
                "| adapter | seen |", "| --- | --- |"]
        for adapter in adapters:
            seen = doc["adapters"][adapter].get("probes", {}).get(qid, "library not installed")
            out.append(f"| `{adapter}` | {_value(seen)} |")
        out.append("")
    return out


def deviations(doc: dict) -> list[str]:
    out = ["## Deviations found", "",
           "For each library, the first failing test of each claim it fails, with the smallest input Hypothesis",
           "found and the known bug it matches when one does (`likely cause`).", ""]
    for adapter, entry in doc["adapters"].items():
        out += [f"### `{adapter}`", ""]
        if entry.get("error"):
            out += [f"The run did not complete: {text(entry['error'][-300:])}", ""]
        if not entry["failures"]:
            out += ["No claim fails.", ""]
            continue
        for f in entry["failures"]:
            out.append(f"- **{_claim_link(f['claim'])}** (`{f['test']}`, {f['dtype']}):")
            out += [f"    - {text(line)}" for line in f["lines"]]
        out.append("")
    return out


_MEASURED = re.compile(r"^[-+.\de]+ \((.+)\)$")  # "3.1e-16 (float64 throughout)": a measured error and its verdict


def same_answer(now, committed) -> bool:
    """Whether the installed library answers a question as the page does. A measured error is compared by its
    verdict alone: float64's rounding noise differs from one CPU to another (3.1e-16 on one machine, 7.7e-17 on
    another, for the same library), and the page shows the committed run's figure."""
    a, b = (_MEASURED.match(x) if isinstance(x, str) else None for x in (now, committed))
    if a and b:
        return a.group(1) == b.group(1)
    return now == committed


def check() -> int:
    """0 when docs/libraries.md is the render of docs_gen/data/libraries.json and, for the libraries installed
    at the committed versions, every question's answer is the committed one."""
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    problems = []
    if PAGE.read_text(encoding="utf-8") != render(doc, source="docs_gen/data/libraries.json"):
        problems.append(f"{PAGE.relative_to(ROOT)} is not the render of {DATA.relative_to(ROOT)}: "
                        "run `python -m docs_gen.libraries render docs_gen/data/libraries.json docs/libraries.md`")
    for adapter, entry in doc["adapters"].items():
        pkg = package_of(adapter)
        if version_of(pkg) != doc["versions"].get(pkg):
            continue  # another version: its answers may differ, and the page says which version it shows
        now = probe(adapter)
        for qid, answer in entry.get("probes", {}).items():
            if not same_answer(now.get(qid), answer):
                problems.append(f"{adapter}, {qid}: the page says {answer!r}, the installed library answers {now.get(qid)!r}")
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docs_gen.libraries", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when docs/libraries.md is stale")
    sub = parser.add_subparsers(dest="cmd")
    r = sub.add_parser("run", help="run the spec on every adapter and render the page")
    r.add_argument("--out", type=Path, default=ROOT / ".artifacts" / "libraries")
    r.add_argument("--adapters", default="all", help="comma-separated adapter names (adapters/), or all")
    r.add_argument("--examples", type=int, default=None, help="MHA_SPEC_EXAMPLES for each run (fewer: faster)")
    g = sub.add_parser("render", help="the page from a run's libraries.json")
    g.add_argument("json", type=Path)
    g.add_argument("page", type=Path, nargs="?", default=PAGE)
    args = parser.parse_args(argv)
    if args.check:
        return check()
    if args.cmd == "run":
        names = adapter_names() if args.adapters == "all" else [a.strip() for a in args.adapters.split(",") if a.strip()]
        doc = run(args.out, names, args.examples)
        (args.out / "libraries.md").write_text(render(doc, source=f"{args.out.name}/libraries.json"), encoding="utf-8")
        failed_runs = [a for a, e in doc["adapters"].items() if e.get("error")]
        return 1 if failed_runs else 0
    if args.cmd == "render":
        doc = json.loads(args.json.read_text(encoding="utf-8"))
        source = "docs_gen/data/libraries.json" if args.json.resolve() == DATA else args.json.name
        args.page.write_text(render(doc, source=source), encoding="utf-8")
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
