"""How many Hypothesis examples each chapter needs: the kill rate of the known bugs against the count.

A known bug (impls/mutants/) records the claims it must fail (CAUGHT_BY, ALSO_CAUGHT_BY). For each
chapter, the bugs with a claim there are run on that chapter's tests at several example counts, each
count over several random samples (the `sample` profile: random, no example database, one
--hypothesis-seed per sample):

    MHA_SPEC_PROFILE=sample MHA_SPEC_EXAMPLES=N pytest spec_tests/test_CHAPTER.py \
        --impl BUG1.py,BUG2.py,... --claim THEIR_CLAIMS --hypothesis-seed S --spec-report r.json

with each bug on its own claims only (docs_gen/kill_rate_pairs.py leaves out the rest: their
results are never read).

A (bug, claim) pair is caught in a sample when the claim's status for the bug is "failed". The kill
rate at N is the share of (bug, claim, sample) triples caught; a claim "needs" the smallest N at
which every bug recorded to fail it did so in every sample. The claim's example count in the suite's
profiles (its `examples` in spec_tests/claims.toml) is chosen from it with a margin (MARGIN times
"needs", never less than FLOOR); the run prints the counts its data chooses, and a test checks that
claims.toml holds them.

    python -m docs_gen.kill_rate                        # counts 1,2,4,8,16,25 x 5 samples, 2 jobs
    python -m docs_gen.kill_rate --counts 1,4 --samples 2 --chapters sdpa,masks
    python -m docs_gen.kill_rate --from build/kill_rate/kill_rate.json   # only re-render the table
    python -m docs_gen.kill_rate --missing              # only the known bugs the committed data lacks, merged in

`--missing` (or `--bugs a,b`) runs the same counts and samples as the committed data, with only those
bugs, and merges each run into the committed run of the same chapter, count and sample: the other bugs'
results stay as measured, and the data covers the whole catalogue (tests/test_example_counts.py checks it).

Writes build/kill_rate/ (one report per run), docs_gen/data/kill_rate.json and the table fragment
docs_gen/fragments/kill_rate.md that docs/conventions.md includes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from impls import mutants as known_bugs
from spec_tests.harness import claims as catalogue

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "docs_gen" / "data" / "kill_rate.json"
FRAGMENT = ROOT / "docs_gen" / "fragments" / "kill_rate.md"
COUNTS = (1, 2, 4, 8, 16, 25)
SAMPLES = 5


def plan(chapters: list[str] | None = None, bugs: list[str] | None = None) -> dict[str, dict[str, list[str]]]:
    """chapter -> {bug: [its recorded claims in that chapter]}, for the bugs that can run here (only
    `bugs`, when given)."""
    from tests.helpers import missing_packages, mutant_needs

    where = catalogue.catalogue()
    out: dict[str, dict[str, list[str]]] = {}
    for bug in known_bugs.catalogue():
        if missing_packages(mutant_needs(bug.name)) or (bugs is not None and bug.name not in bugs):
            continue
        for claim in bug.claims:
            chapter = where[claim].chapter
            if chapters and chapter not in chapters:
                continue
            out.setdefault(chapter, {}).setdefault(bug.name, []).append(claim)
    return dict(sorted(out.items()))


def run_chapter(chapter: str, bugs: dict[str, list[str]], count: int | None, seed: int | None, folder: Path,
                profile: str = "sample") -> dict:
    """One run: every bug of the chapter on the claims it records there, N examples (None: the
    profile's own counts), one sample (seed None: the profile's own, derandomised for ci and grading)."""
    report = folder / f"{chapter}-{profile}-n{count}-s{seed}.json"
    claims = sorted({c for cs in bugs.values() for c in cs})
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "docs_gen.kill_rate_pairs",
           "--no-claim-summary",
           str(ROOT / "spec_tests" / f"test_{chapter}.py"),
           "--impl", ",".join(str(known_bugs.FOLDER / f"{b}.py") for b in bugs), "--claim", ",".join(claims),
           *([f"--hypothesis-seed={seed}"] if seed is not None else []), "--spec-report", str(report)]
    env = {k: v for k, v in os.environ.items()
           if k not in ("CI", "MHA_SPEC_IMPL", "MHA_SPEC_MEASUREMENTS", "MHA_SPEC_EXAMPLES")}
    env.update(MHA_SPEC_PROFILE=profile, MHA_SPEC_NO_REPRO="1", **({"MHA_SPEC_EXAMPLES": str(count)} if count else {}))
    env["MHA_SPEC_KILL_RATE_PAIRS"] = json.dumps(bugs)  # each bug on its own claims only (kill_rate_pairs.py)
    began = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    if not report.exists():
        raise RuntimeError(f"{chapter} n={count} seed={seed}: no report (exit {proc.returncode})\n"
                           + (proc.stdout + proc.stderr)[-3000:])
    statuses = json.loads(report.read_text())["claims"]
    caught = {b: {c: statuses.get(c, {}).get(b) == "failed" for c in cs} for b, cs in bugs.items()}
    return {"chapter": chapter, "count": count, "seed": seed, "caught": caught,
            "seconds": round(time.monotonic() - began, 1)}


def measure(counts, samples: int, jobs: int, folder: Path, chapters=None, bugs=None) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    todo = plan(chapters, bugs)
    runs = [(ch, bugs, n, s) for ch, bugs in todo.items() for n in counts for s in range(samples)]
    began = time.monotonic()
    with ThreadPoolExecutor(jobs) as pool:
        done = list(pool.map(lambda r: run_chapter(*r, folder), runs))
    return {"counts": list(counts), "samples": samples, "plan": todo, "runs": done,
            "seconds": round(time.monotonic() - began), "date": time.strftime("%Y-%m-%d"),
            "commit": _commit()}


def verify(profiles, folder: Path, jobs: int) -> dict[str, dict[str, list[str]]]:
    """Each chapter's known bugs under each profile at the suite's own counts (claims.toml): profile ->
    chapter -> the (bug, claim) pairs not caught. The check behind the table's last column."""
    folder.mkdir(parents=True, exist_ok=True)
    runs = [(ch, bugs, None, None, folder, p) for p in profiles for ch, bugs in plan().items()]
    with ThreadPoolExecutor(jobs) as pool:
        done = list(pool.map(lambda r: (r[5], run_chapter(*r)), runs))
    return {p: {r["chapter"]: sorted(f"{b} ({c})" for b, cs in r["caught"].items() for c, hit in cs.items() if not hit)
                for q, r in done if q == p} for p in profiles}


def unmeasured(data: dict) -> dict[str, list[str]]:
    """bug -> its (chapter) claims that the catalogue records and the data `data` has no measurement of."""
    out: dict[str, list[str]] = {}
    for chapter, bugs in plan().items():
        for bug, claims in bugs.items():
            done = data["plan"].get(chapter, {}).get(bug, [])
            out.setdefault(bug, []).extend(c for c in claims if c not in done)
    return {b: cs for b, cs in out.items() if cs}


def merge(data: dict, new: dict) -> dict:
    """The committed data with `new` (a run of some bugs at the same counts and samples) merged in: each new
    run's results join the committed run of the same chapter, count and sample, whose other bugs stay."""
    if new["counts"] != data["counts"] or new["samples"] != data["samples"]:
        raise ValueError(f"a merge needs the committed counts {data['counts']} and samples {data['samples']}, "
                         f"not {new['counts']} and {new['samples']}")
    runs = {(r["chapter"], r["count"], r["seed"]): dict(r, caught=dict(r["caught"])) for r in data["runs"]}
    for r in new["runs"]:
        key = (r["chapter"], r["count"], r["seed"])
        if key in runs:
            runs[key]["caught"].update(r["caught"])
            runs[key]["seconds"] = round(runs[key]["seconds"] + r["seconds"], 1)
        else:
            runs[key] = r
    plan_ = {ch: dict(bugs) for ch, bugs in data["plan"].items()}
    for ch, bugs in new["plan"].items():
        plan_.setdefault(ch, {}).update(bugs)
    return {**data, "plan": {ch: dict(sorted(b.items())) for ch, b in sorted(plan_.items())}, "runs": list(runs.values()),
            "seconds": data["seconds"] + new["seconds"], "date": new["date"], "commit": new["commit"]}


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return ""


def _needs(runs: list[dict], pairs, counts) -> tuple[int | None, dict[int, list[str]]]:
    """The smallest count from which every pair was caught in every sample (None: not even at the
    largest), and the pairs missed at each count."""
    missed = {n: sorted({f"{b} ({c})" for r in runs if r["count"] == n for b, c in pairs if not r["caught"][b][c]})
              for n in counts}
    full = [n for n in counts if all(not missed[m] for m in counts if m >= n)]
    return (min(full) if full else None), missed


def summary(data: dict) -> dict[str, dict]:
    """chapter -> {"rates": {N: kill rate}, "needs": smallest N catching every pair in every sample,
    "missed": {N: [bug/claim pairs missed in some sample]}, "pairs", "bugs", "claims": {claim: needs}}."""
    out: dict[str, dict] = {}
    for chapter, bugs in data["plan"].items():
        pairs = [(b, c) for b, cs in bugs.items() for c in cs]
        runs = [r for r in data["runs"] if r["chapter"] == chapter]
        rates = {}
        for n in data["counts"]:
            hits = [r["caught"][b][c] for r in runs if r["count"] == n for b, c in pairs]
            rates[n] = sum(hits) / len(hits) if hits else None
        needs, missed = _needs(runs, pairs, data["counts"])
        claims = {c: _needs(runs, [(b, x) for b, x in pairs if x == c], data["counts"])[0]
                  for c in sorted({c for _, c in pairs}, key=_claim_order)}
        out[chapter] = {"rates": rates, "needs": needs, "missed": missed, "pairs": len(pairs), "bugs": len(bugs),
                        "claims": claims}
    return out


def _claim_order(claim: str):
    prefix, _, number = claim.rpartition("-")
    return prefix, int(number)


# The selection rule: a claim's tests draw MARGIN times the count its known bugs need, at least FLOOR.
MARGIN, FLOOR = 3, 10


def chosen_counts(data: dict) -> dict[str, int]:
    """claim -> the example count the study's data chooses (what claims.toml's `examples` must be)."""
    return {claim: chosen(n, max(data["counts"])) for claim, n in claim_needs(data).items()}


def claim_needs(data: dict) -> dict[str, int | None]:
    """claim -> the count its known bugs need, for every claim with a known bug measured."""
    return {c: n for row in summary(data).values() for c, n in row["claims"].items()}


def chosen(needs: int | None, largest: int) -> int:
    """The example count a claim's tests draw, from the count its known bugs need: MARGIN times it, at
    least FLOOR; a claim whose bugs escaped even the largest count measured draws MARGIN times that."""
    return MARGIN * largest if needs is None else max(FLOOR, MARGIN * needs)


def render(data: dict) -> str:
    EXAMPLES = {c.id: c.examples for c in catalogue.catalogue().values() if c.examples}
    table = summary(data)
    counts = data["counts"]
    lines = [
        "<!-- generated by `python -m docs_gen.kill_rate`; do not edit by hand -->",
        "",
        f"Each known bug run on its chapter's tests at each example count, {data['samples']} random samples "
        f"per count (commit {data['commit']}, {data['date']}, {data['seconds'] // 60} min on two cores). "
        "A cell is the share of (bug, claim, sample) triples in which the claim failed. A claim **needs** "
        "the smallest count at which every bug recorded to fail it did so in every sample; its tests draw "
        f"{MARGIN} times that, and at least {FLOOR} (a test of several claims, the largest of their counts).",
        "",
        "| chapter | bugs | " + " | ".join(f"{n} ex." for n in counts) + " | needs | its claims draw |",
        "|---|---:|" + "---:|" * len(counts) + "---:|---|",
    ]
    for chapter, row in table.items():
        cells = " | ".join("—" if row["rates"][n] is None else f"{100 * row['rates'][n]:.0f}%" for n in counts)
        needs = row["needs"] if row["needs"] is not None else f"> {counts[-1]}"
        draws = sorted({EXAMPLES.get(c) for c in row["claims"]} - {None})
        special = [f"{c} {EXAMPLES[c]}" for c in row["claims"] if EXAMPLES.get(c, FLOOR) != draws[0]]
        shown = f"{draws[0]}" + (f" ({', '.join(special)})" if special else "") if draws else "—"
        lines.append(f"| {chapter} | {row['bugs']} | {cells} | {needs} | {shown} |")
    slow = {ch: row["missed"] for ch, row in table.items() if any(row["missed"].values())}
    if slow:
        lines += ["", "The bugs that needed more than one example somewhere (the largest count at which each was "
                  "missed in some sample):", ""]
        for chapter, missed in slow.items():
            last: dict[str, int] = {}
            for n in counts:
                for pair in missed[n]:
                    last[pair] = n
            lines.append(f"- {chapter}: " + ", ".join(f"{p} at {n}" for p, n in sorted(last.items())))
    return "\n".join(lines) + "\n"


def write_fragment() -> Path | None:
    """The table fragment from the committed measurement (docs_gen/data/kill_rate.json), through
    docs_gen.write_output: `python -m docs_gen --check` finds it stale when claims.toml's counts or the data change."""
    import docs_gen

    if not DATA.exists():
        return None
    return docs_gen.write_output(FRAGMENT, render(json.loads(DATA.read_text())))


def dump(data: dict) -> str:
    """The measurement as JSON, one run per line (a diff of a rerun shows what changed)."""
    head = {k: v for k, v in data.items() if k != "runs"}
    body = json.dumps(head, indent=1)[:-2]
    runs = ",\n  ".join(json.dumps(r, separators=(",", ":")) for r in data["runs"])
    return f'{body},\n "runs": [\n  {runs}\n ]\n}}\n'


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m docs_gen.kill_rate", description=__doc__.split("\n\n")[0])
    p.add_argument("--counts", default=",".join(map(str, COUNTS)))
    p.add_argument("--samples", type=int, default=SAMPLES)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--chapters", default="", help="a comma list (default: every chapter with a known bug)")
    p.add_argument("--out", type=Path, default=ROOT / "build" / "kill_rate")
    p.add_argument("--from", dest="source", type=Path, default=None, help="re-render from a saved kill_rate.json")
    p.add_argument("--no-write", action="store_true", help="measure into --out only; leave docs_gen/ alone")
    p.add_argument("--bugs", default="", help="a comma list: measure only these, merged into the committed data")
    p.add_argument("--missing", action="store_true", help="measure only the bugs the committed data lacks, merged in")
    p.add_argument("--verify", default="", metavar="PROFILES",
                   help="instead: run every chapter's known bugs once per profile (e.g. ci,grading) at the "
                        "suite's own counts, and list what was not caught (exit 1 if anything)")
    args = p.parse_args(argv)
    if args.verify:
        missed = verify(args.verify.split(","), args.out / "verify", args.jobs)
        for profile, chapters in missed.items():
            for chapter, pairs in chapters.items():
                print(f"{profile:8} {chapter:16} " + ("every bug caught" if not pairs else "NOT CAUGHT: " + ", ".join(pairs)))
        return 1 if any(pairs for chapters in missed.values() for pairs in chapters.values()) else 0
    if args.source:
        data = json.loads(args.source.read_text())
    elif args.bugs or args.missing:
        committed = json.loads(DATA.read_text())
        bugs = [b for b in args.bugs.split(",") if b] or sorted(unmeasured(committed))
        print(f"measuring {len(bugs)} bug(s): {', '.join(bugs) or '(none)'}", flush=True)
        new = measure(tuple(committed["counts"]), committed["samples"], args.jobs, args.out, None, bugs)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "kill_rate.new.json").write_text(dump(new))
        data = merge(committed, new)
        (args.out / "kill_rate.json").write_text(dump(data))
    else:
        counts = tuple(int(n) for n in args.counts.split(","))
        data = measure(counts, args.samples, args.jobs, args.out, [c for c in args.chapters.split(",") if c] or None)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "kill_rate.json").write_text(dump(data))
    print(render(data))
    print("The counts these data choose, for spec_tests/claims.toml (each claim's `examples`):")
    for claim, count in sorted(chosen_counts(data).items()):
        print(f"  {claim}: examples = {count}")
    if not args.no_write:
        DATA.write_text(dump(data))
        FRAGMENT.write_text(render(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
