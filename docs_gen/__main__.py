"""python -m docs_gen [--run] [--katex] [--spec-report PATH] [--benchmark-json PATH]: see docs_gen/__init__.py."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import docs_gen
from docs_gen import (ARTIFACTS, DOCS, FRAGMENTS, ROOT, benchmarks, boundaries_table, bug_feedback, claims_pages,
                      conformance, downloads, examples, figures, kill_rate, mask_explorer, measurements, notebooks,
                      validation)
from spec_tests.harness import claims

SPEC_REPORT = ARTIFACTS / "spec-report.json"
BENCH_JSON = ARTIFACTS / "benchmarks.json"
MEASUREMENTS = ARTIFACTS / "measurements"  # figures tests record ($MHA_SPEC_MEASUREMENTS), e.g. EFF-2's memory
BENCH_DIR = ROOT / "spec_tests" / "benchmarks"
# The conformance run: every built-in that can run here, and the untouched template, whose row
# shows what a learner's first run looks like. -n 2: pytest-xdist over two cores.
SPEC_IMPLS = "all,template"
SPEC_ARGS = ["-n", "2", "-q", "-p", "no:cacheprovider", "--no-claim-summary"]
BENCH_ARGS = ["-q", "-p", "no:cacheprovider", "--benchmark-only", "--no-claim-summary"]
# The benchmarked implementations: the fast ones and their naive baselines. `reference` and
# `per_head_loop` are written to be read, and their speed is nobody's claim.
BENCH_IMPLS = "numpy_fast,numpy_chunked,torch_naive,torch_sdpa,torch_chunked"
KATEX_FILES = ["katex.min.js", "katex.min.css", "fonts", "contrib/auto-render.min.js"]
# Written by --katex and included by docs/index.md (snippets with check_paths): a build whose
# KaTeX step was skipped fails there, under --strict, instead of showing raw TeX.
KATEX_STAMP = DOCS / "assets" / "katex" / "VERSION.txt"


def _shown(path: Path) -> str:
    """A path as a command line shows it: relative to the repository when it lies inside."""
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def _command_file(json_path: Path) -> Path:
    return json_path.with_suffix(".command.txt")


def run_spec(path: Path, impls: str = SPEC_IMPLS, keep_measurements: bool = False) -> str:
    """Run the whole specification with a JSON report; a failing implementation is data, not an error."""
    path.parent.mkdir(parents=True, exist_ok=True)
    args = ["pytest", "--impl", impls, *SPEC_ARGS, "--spec-report", _shown(path)]
    log = path.with_suffix(".log")
    print(f"docs_gen: {shlex.join(args)}  (output in {_shown(log)})", flush=True)
    if MEASUREMENTS.exists() and not keep_measurements:
        shutil.rmtree(MEASUREMENTS)  # only this run's figures
    env = dict(os.environ, MHA_SPEC_MEASUREMENTS=str(MEASUREMENTS))
    with open(log, "w") as out:  # thousands of lines, the template's failures among them: keep them in a file
        code = subprocess.call([sys.executable, "-m", *args], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    lines = log.read_text(errors="replace").splitlines()
    print("docs_gen: " + (lines[-1] if lines else "(no output)"), flush=True)
    if not path.exists():
        print("\n".join(lines[-40:]), flush=True)
        raise SystemExit(f"docs_gen: the suite wrote no report (pytest exit code {code})")
    _command_file(path).write_text(shlex.join(args) + "\n")
    doc = json.loads(path.read_text())
    doc.setdefault("commit", conformance.current_commit())  # the commit this run measured
    path.write_text(json.dumps(doc, indent=1))
    return shlex.join(args)


def run_benchmarks(path: Path, impls: str, extra: list[str]) -> str | None:
    if not BENCH_DIR.exists() or not any(BENCH_DIR.glob("bench_*.py")):
        print(f"docs_gen: no benchmark suite at {BENCH_DIR.relative_to(ROOT)}/bench_*.py; skipping", flush=True)
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    files = sorted(str(p.relative_to(ROOT)) for p in BENCH_DIR.glob("bench_*.py"))
    args = ["pytest", *files, "--impl", impls, *BENCH_ARGS, *extra, "--benchmark-json", _shown(path)]
    print("docs_gen: " + shlex.join(args), flush=True)
    code = subprocess.call([sys.executable, "-m", *args], cwd=ROOT)
    if code != 0 or not path.exists():
        raise SystemExit(f"docs_gen: the benchmark run failed (pytest exit code {code})")
    _command_file(path).write_text(shlex.join(args) + "\n")
    return shlex.join(args)


def merge_reports(path: Path, others: list[Path]) -> str | None:
    """Add the implementations and test outcomes of other --spec-report files (an earlier run of the
    built-ins, say) to the report at `path`; the claim table is recomputed over all of them.
    Returns the commands that made the merged reports, as their .command.txt files recorded them."""
    from spec_tests.harness import report as report_mod

    doc = json.loads(path.read_text())
    commands = [_recorded_command(path)]
    for other in others:
        more = json.loads(other.read_text())
        doc["implementations"] = {**more.get("implementations", {}), **doc.get("implementations", {})}
        doc["tests"] = more.get("tests", []) + doc.get("tests", [])
        commands.insert(0, _recorded_command(other))
        print(f"docs_gen: merged {len(more.get('tests', []))} test outcomes from {_shown(other)}", flush=True)
    records = [report_mod.Outcome(**r) for r in doc["tests"]]
    doc["claims"] = report_mod.by_claim(records)
    path.write_text(json.dumps(doc, indent=1))
    joined = " ; ".join(c for c in commands if c)
    if joined:
        _command_file(path).write_text(joined + "\n")
    return joined or None


def install_katex() -> Path:
    """KaTeX from the npm registry (version pinned in docs_gen/package-lock.json), copied into the docs."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("docs_gen: npm is needed to install KaTeX (Debian: apt-get install npm)")
    here = ROOT / "docs_gen"
    subprocess.check_call([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=here)
    dist = here / "node_modules" / "katex" / "dist"
    target = DOCS / "assets" / "katex"
    if target.exists():
        shutil.rmtree(target)
    for name in KATEX_FILES:
        src, dst = dist / name, target / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy2(src, dst)
    version = json.loads((dist.parent / "package.json").read_text())["version"]
    KATEX_STAMP.write_text(f"KaTeX {version}\n", encoding="utf-8")
    print(f"docs_gen: KaTeX {version} copied to {target.relative_to(ROOT)}", flush=True)
    return target


def check() -> int:
    """--check: every deterministic page and fragment regenerated in memory and compared."""
    docs_gen.STALE = []
    claims_pages.write_all(DOCS, FRAGMENTS)
    for path, content in mask_explorer.outputs().items():
        docs_gen.write_output(path, content)
    for path, content in {**notebooks.outputs(), **downloads.outputs()}.items():  # the site's downloads
        docs_gen.write_output(path, content)
    examples.write_all()  # each chapter's worked example, re-run (figures: tests/test_figures.py)
    kill_rate.write_fragment()
    boundaries_table.write_fragment()
    validation.write_all()  # docs/validation.md, the mutation report
    stale, docs_gen.STALE = docs_gen.STALE, None
    problems = [f"  {_shown(p)}" for p in stale]
    if problems:
        print("docs_gen --check: these generated files differ from what `python -m docs_gen` writes now:\n"
              + "\n".join(problems) + "\nRun `python -m docs_gen` and commit the result.", flush=True)
    if not KATEX_STAMP.exists():
        print(f"docs_gen --check: no KaTeX in {_shown(KATEX_STAMP.parent)}: run `python -m docs_gen --katex` "
              "before `mkdocs build` (the site's math needs it).", flush=True)
    ok = not problems and KATEX_STAMP.exists()
    if ok:
        print("docs_gen --check: every generated page and fragment is current; KaTeX is installed", flush=True)
    return 0 if ok else 1


def _recorded_command(path: Path) -> str | None:
    f = _command_file(path)
    return f.read_text().strip() if f.exists() else None


def write_deterministic() -> None:
    """Every page, fragment, notebook, download and figure that depends on the source alone (no run)."""
    written = claims_pages.write_all(DOCS, FRAGMENTS)
    for path, content in mask_explorer.outputs().items():
        written.append(docs_gen.write_output(path, content))
    shelved = [docs_gen.write_output(path, content) for path, content in notebooks.outputs().items()]
    print(f"docs_gen: {len(shelved) - 1} chapter notebooks in {_shown(notebooks.OUT)}", flush=True)
    for path, content in downloads.outputs().items():
        docs_gen.write_output(path, content)
    print(f"docs_gen: {len(written)} claim, pitfall and test-source pages", flush=True)
    drawn = figures.write_all()  # deterministic: drawn from reference/ on every run
    print(f"docs_gen: {len(drawn)} figures in {_shown(figures.FIGURE_DIR)}", flush=True)
    ran = examples.write_all()  # each chapter's worked example, run and its output kept
    print(f"docs_gen: {len(ran)} worked examples run into docs_gen/fragments/*.example.md", flush=True)
    if kill_rate.write_fragment():
        print(f"docs_gen: {_shown(kill_rate.FRAGMENT)} from {_shown(kill_rate.DATA)}", flush=True)
    print(f"docs_gen: {_shown(boundaries_table.write_fragment())} from spec_tests/claims.toml", flush=True)
    if validation.write_all():
        print(f"docs_gen: {_shown(validation.PAGE)} from {_shown(validation.DATA)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m docs_gen", description=__doc__)
    p.add_argument("--run", action="store_true",
                   help="run the suite and the benchmarks first, writing the two JSON files below")
    p.add_argument("--katex", action="store_true", help="install KaTeX (npm) into docs/assets/katex for offline math")
    p.add_argument("--spec-report", type=Path, default=SPEC_REPORT, help=f"default: {SPEC_REPORT.relative_to(ROOT)}")
    p.add_argument("--benchmark-json", type=Path, default=BENCH_JSON, help=f"default: {BENCH_JSON.relative_to(ROOT)}")
    p.add_argument("--bench-impl", default=BENCH_IMPLS, metavar="IMPLS",
                   help=f"implementations to benchmark with --run (default: {BENCH_IMPLS})")
    p.add_argument("--bench-arg", action="append", default=[], metavar="ARG",
                   help="extra pytest argument for the benchmark run (repeatable), e.g. --bench-arg='-k=not L4096'")
    p.add_argument("--spec-impl", default=SPEC_IMPLS, metavar="IMPLS",
                   help=f"implementations for the suite run of --run (default: {SPEC_IMPLS})")
    p.add_argument("--merge-report", type=Path, action="append", default=[], metavar="PATH",
                   help="another --spec-report JSON to merge into the conformance page (repeatable): "
                        "e.g. CI's run of the built-ins, with --run --spec-impl template")
    p.add_argument("--no-bench", action="store_true",
                   help="with --run: run the suite only; docs/benchmarks.md comes from --benchmark-json if it "
                        "exists, else stays as committed")
    p.add_argument("--check", action="store_true",
                   help="write nothing: fail (exit 1) if a deterministic generated page or fragment differs "
                        "from what would be written now, or if KaTeX is missing")
    p.add_argument("--bug-feedback", nargs="*", metavar="NAME",
                   help="rerun the suite against each known bug (or those named) for the failure message its "
                        "card shows, into docs_gen/fragments/bugs/ (minutes)")
    args = p.parse_args(argv)
    if args.katex:
        install_katex()
    if args.check:
        return check()
    spec_report, bench_json = args.spec_report.resolve(), args.benchmark_json.resolve()

    spec_cmd = bench_cmd = None
    if args.run:
        spec_cmd = run_spec(spec_report, args.spec_impl, keep_measurements=bool(args.merge_report))
        if not args.no_bench:
            bench_cmd = run_benchmarks(bench_json, args.bench_impl, args.bench_arg)
    if args.merge_report:
        spec_cmd = merge_reports(spec_report, [m.resolve() for m in args.merge_report])

    if args.bug_feedback is not None:
        bug_feedback.run(args.bug_feedback or None)
    write_deterministic()

    chapters, catalogue = claims.chapters(), claims.catalogue()
    if spec_report.exists():
        conformance.write(spec_report, DOCS / "conformance.md", spec_cmd or _recorded_command(spec_report))
        print(f"docs_gen: docs/conformance.md from {spec_report}", flush=True)
        created = json.loads(spec_report.read_text()).get("created")
        measurements.write_all(chapters, catalogue, MEASUREMENTS, FRAGMENTS, created)
        print(f"docs_gen: measurement fragments from {_shown(MEASUREMENTS)}", flush=True)
    elif not all((FRAGMENTS / f"{c}.measurements.md").exists() for c in chapters):
        measurements.write_all(chapters, catalogue, None, FRAGMENTS)
    if not spec_report.exists() and not (DOCS / "conformance.md").exists():
        raise SystemExit(f"docs_gen: no spec report at {spec_report}; run `python -m docs_gen --run`")
    elif not spec_report.exists():
        print(f"docs_gen: no spec report at {spec_report}; docs/conformance.md left as it is", flush=True)

    assets = DOCS / "assets" / "benchmarks"
    if bench_json.exists():
        benchmarks.write(bench_json, DOCS / "benchmarks.md", assets, bench_cmd or _recorded_command(bench_json))
        print(f"docs_gen: docs/benchmarks.md and {assets.relative_to(ROOT)}/*.svg from {bench_json}", flush=True)
    elif not (DOCS / "benchmarks.md").exists():
        benchmarks.placeholder(DOCS / "benchmarks.md", "The benchmark suite (`spec_tests/benchmarks/`) has not been "
                               "run for this build. `python -m docs_gen --run` runs it and fills this page.")
        print("docs_gen: no benchmark JSON; docs/benchmarks.md says so", flush=True)
    else:
        print(f"docs_gen: no benchmark JSON at {bench_json}; docs/benchmarks.md left as it is", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
