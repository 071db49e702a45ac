"""Which claims each known bug (impls/mutants/) fails: the measurement behind the bug catalogue's table.

A bug of one concept should fail the claims of that concept and few others. This runs the suite
once per batch of mutants (`pytest --impl a.py,b.py,... --spec-report r.json`, ci profile),
collects per mutant the set of claims whose status is "failed", and counts those outside the
chapter of the claim the mutant names (`CAUGHT_BY`).

    python -m docs_gen.mutant_claims                       # every mutant, into build/mutant_claims/
    python -m docs_gen.mutant_claims --batch 8 --out DIR   # batch size, output folder
    python -m docs_gen.mutant_claims --from DIR            # only rebuild the table from saved reports
    python -m docs_gen.mutant_claims --before OLD.json     # add the "before" column from an older run
    python -m docs_gen.mutant_claims --missing --merge --before docs_gen/data/mutant_claims.before.json
        # only the bugs the committed measurement lacks, their rows added to it (MEASURED) and the table redone

Reports of reruns limited to some claims, saved as DIR/override/*.json, replace those claims' statuses.

Writes DIR/mutant_claims.json and docs_gen/fragments/bugs.claims_failed.md (the table fragment
docs/bugs.md includes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from impls import mutants as known_bugs
from spec_tests.harness import claims as catalogue

ROOT = Path(__file__).resolve().parents[1]
FRAGMENT = ROOT / "docs_gen" / "fragments" / "bugs.claims_failed.md"
# The committed measurement: a run's DIR/mutant_claims.json, which the bug catalogue and each claim's
# list of the known bugs that fail it (docs_gen/claims_pages.py) are generated from.
MEASURED = ROOT / "docs_gen" / "data" / "mutant_claims.after.json"

# Bugs that corrupt every value they touch (the exception to the "few other claims" aim).
CORRUPTS_EVERYTHING = {"nondeterministic_noise", "modifies_input_in_place"}


def mutants_of(root: Path) -> Path:
    return root / "impls" / "mutants"


def mutant_names(root: Path = ROOT) -> list[str]:
    return known_bugs.names(mutants_of(root))


def _chapter_of(root: Path) -> dict[str, str]:
    """claim ID -> chapter, as the catalogue's reader of the checkout being measured reads it (this
    checkout's spec_tests.harness.claims, or, for another one, its own, in a Python started there)."""
    if root.resolve() == ROOT:
        return {c.id: c.chapter for c in catalogue.catalogue().values()}
    code = ("import json; from spec_tests.harness import claims; "
            "print(json.dumps({c.id: c.chapter for c in claims.catalogue().values()}))")
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def measured_failures(path: Path = MEASURED) -> dict[str, list[str]]:
    """known bug -> the claims it failed in the measurement at `path` ({} when there is none)."""
    if not path.exists():
        return {}
    return {name: r["failed"] for name, r in json.loads(path.read_text(encoding="utf-8"))["mutants"].items()}


def run_batches(root: Path, names: list[str], out: Path, batch: int, extra: list[str]) -> None:
    """One pytest run per batch of mutants; each writes out/report-<i>.json (kept, so a rerun can skip it)."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CI": "1", "MHA_SPEC_NO_REPRO": "1", "PYTHONPATH": str(root)}
    env.pop("MHA_SPEC_IMPL", None)
    env.pop("MHA_SPEC_MEASUREMENTS", None)
    for i in range(0, len(names), batch):
        group = names[i:i + batch]
        report = out / f"report-{group[0]}.json"
        if report.exists():
            continue
        impls = ",".join(str(mutants_of(root) / f"{n}.py") for n in group)
        cmd = ["nice", "-n", "10", sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
               "--no-claim-summary", "--impl", impls, "--spec-report", str(report), *extra]
        print(f"[{i + len(group)}/{len(names)}] {' '.join(group)}", flush=True)
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
        (out / f"log-{group[0]}.txt").write_text(proc.stdout[-20000:] + proc.stderr[-5000:])


def collect(root: Path, out: Path) -> dict:
    """Per mutant: its claim, its chapter, the claims it fails, and those outside its chapter."""
    chapter_of = _chapter_of(root)
    failed: dict[str, set[str]] = {}
    for report in sorted(out.glob("report-*.json")):
        data = json.loads(report.read_text())
        for claim_id, per_impl in data.get("claims", {}).items():
            for impl, status in per_impl.items():
                failed.setdefault(impl, set())
                if status == "failed":
                    failed[impl].add(claim_id)
    # Reruns of some claims (`--claim X,Y`, saved under out/override/) replace those claims' statuses.
    for report in sorted((out / "override").glob("*.json")):
        data = json.loads(report.read_text())
        for claim_id, per_impl in data.get("claims", {}).items():
            for impl, status in per_impl.items():
                if impl in failed:
                    failed[impl].discard(claim_id)
                    if status == "failed":
                        failed[impl].add(claim_id)
    result = {}
    for name in mutant_names(root):
        if name not in failed:
            continue
        own = known_bugs.read(name, mutants_of(root)).caught_by
        chapter = chapter_of.get(own, "")
        claims = sorted(failed[name], key=_claim_key)
        outside = [c for c in claims if chapter_of.get(c) != chapter]
        result[name] = {"caught_by": own, "chapter": chapter, "failed": claims, "outside": outside,
                        "caught": own in failed[name]}
    return result


def _claim_key(claim_id: str):
    prefix, _, number = claim_id.rpartition("-")
    return (prefix, int(number) if number.isdigit() else 0)


def summary(result: dict) -> dict:
    counts = [len(r["outside"]) for r in result.values()]
    plain = [len(r["outside"]) for n, r in result.items() if n not in CORRUPTS_EVERYTHING]
    return {
        "mutants": len(result),
        "median_outside": statistics.median(counts) if counts else 0,
        "max_outside": max(counts, default=0),
        "max_outside_excluding_corrupt_all": max(plain, default=0),
        "median_failed": statistics.median([len(r["failed"]) for r in result.values()]) if result else 0,
        "above_4": sorted(n for n, r in result.items() if len(r["outside"]) > 4),
        "not_caught_by_own_claim": sorted(n for n, r in result.items() if not r["caught"]),
    }


def fragment(result: dict, before: dict | None = None) -> str:
    """The Markdown table: one row per known bug, the claims it fails, those outside its chapter."""
    s = summary(result)
    lines = [
        "<!-- generated by `python -m docs_gen.mutant_claims`; do not edit by hand -->",
        "",
        "Each known bug, run through the whole specification (ci profile): the claims it fails.",
        "*Outside* counts the failed claims that belong to another chapter than the claim the bug is",
        "filed under; a bug of one concept should fail its own concept's claims and few others.",
        "",
        f"Bugs measured: {s['mutants']}. Claims failed outside the bug's own chapter: median "
        f"{s['median_outside']:g}, maximum {s['max_outside']}"
        + (f" ({', '.join(s['above_4'])} above 4)" if s["above_4"] else "") + ".",
    ]
    if before:
        common = [n for n in result if n in before]
        b = summary({n: before[n] for n in common})
        a = summary({n: result[n] for n in common})
        lines.append(f"On the {len(common)} bugs measured both ways, before each claim's inputs were kept to its own "
                     f"concept (and before error carried forward): median {b['median_outside']:g}, maximum "
                     f"{b['max_outside']}; after: median {a['median_outside']:g}, maximum {a['max_outside']}.")
    lines += ["", "| Bug | Filed under | Claims failed | Outside its chapter |"
              + (" Before (outside) |" if before else ""),
              "|---|---|---|---|" + ("---|" if before else "")]
    for name, r in result.items():
        row = (f"| `{name}` | {r['caught_by']} | {', '.join(r['failed']) or '(none)'} | "
               f"{len(r['outside'])} |")
        if before:
            old = before.get(name)
            row += f" {len(old['outside']) if old else 'not measured'} |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    p.add_argument("--out", type=Path, default=ROOT / "build" / "mutant_claims")
    p.add_argument("--from", dest="from_dir", type=Path, default=None, help="only read saved reports from DIR")
    p.add_argument("--batch", type=int, default=6)
    p.add_argument("--only", default="", help="comma list of mutant names (default: all)")
    p.add_argument("--before", type=Path, default=None, help="a mutant_claims.json of an earlier run")
    p.add_argument("--fragment", type=Path, default=FRAGMENT)
    p.add_argument("--missing", action="store_true", help="only the bugs without a row in the committed measurement")
    p.add_argument("--merge", action="store_true",
                   help="add the rows measured to the committed measurement (docs_gen/data/mutant_claims.after.json)")
    p.add_argument("--no-fragment", action="store_true")
    args, extra = p.parse_known_args(argv)
    root = args.root.resolve()
    out = (args.from_dir or args.out).resolve()
    if args.from_dir is None:
        names = [n for n in args.only.split(",") if n] or mutant_names(root)
        if args.missing:
            names = [n for n in names if n not in measured_failures()]
        run_batches(root, names, out, args.batch, extra)
    result = collect(root, out)
    if args.merge:  # the committed rows, with the ones measured now added (or replaced), in the catalogue's order
        committed = json.loads(MEASURED.read_text(encoding="utf-8"))["mutants"] if MEASURED.exists() else {}
        rows = {**committed, **result}
        result = {n: rows[n] for n in mutant_names(root) if n in rows}
    (out / "mutant_claims.json").write_text(json.dumps({"summary": summary(result), "mutants": result}, indent=1))
    if args.merge:
        MEASURED.write_text(json.dumps({"summary": summary(result), "mutants": result}, indent=1), encoding="utf-8")
    before = json.loads(args.before.read_text())["mutants"] if args.before else None
    if not args.no_fragment:
        args.fragment.write_text(fragment(result, before))
    print(json.dumps(summary(result), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
