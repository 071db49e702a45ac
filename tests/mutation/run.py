"""python -m tests.mutation.run [--targets a,b] [--jobs 2] [--sample N] [--resume] [--rerun-survivors] [--check]

Generates mutants with cosmic-ray's operators (targets.OPERATORS) over copies of the targets, never the
files in impls/ themselves: each mutant is written to its own file under a temporary folder and the suite
runs against it (`pytest spec_tests/test_<chapter>.py ... --impl <that file> -x`, the `ci` profile). A
mutant that fails a test is killed; one that passes every selected test survived.

    (no option)          run every mutant of the targets; write docs_gen/data/mutation.json
    --resume             the same, reusing the outcomes build/mutation/progress.jsonl recorded for mutants of the
                         same file contents (every batch's outcomes go there as it ends: a long run that was
                         stopped continues where it was, on this or a later day)
    --rerun-survivors    run again only the mutants the results file records as surviving, recording their
                         outcome now as `after` (the kill rate before and after the tests that closed them)
    --sample N --check   run every Nth mutant (and every mutant a new test closed); exit 1 if one survives that
                         is neither listed in tests/mutation/equivalent.toml nor a survivor the report already
                         lists (a ratchet: a mutant killed before must stay killed; the reduced form CI runs)
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path

from tests.mutation.targets import OPERATORS, TARGETS, Target, chapters_of

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs_gen" / "data" / "mutation.json"
EQUIVALENT = Path(__file__).with_name("equivalent.toml")
PROGRESS = ROOT / "build" / "mutation" / "progress.jsonl"  # the outcome of each mutant as its batch ends
TIMEOUT_S = 240
PYTEST_ARGS = ["-q", "-p", "no:cacheprovider", "-p", "tests.mutation.quick", "--no-claim-summary"]


@dataclass
class Mutant:
    target: str
    operator: str
    occurrence: int
    lineno: int
    function: str | None
    chapter: str
    code: str  # the original line, stripped
    mutated: str  # the mutated line, stripped
    before: str | None = None  # killed, survived, timeout, error
    after: str | None = None
    failed: str | None = None  # the first test that failed

    @property
    def key(self) -> tuple:
        """What identifies a mutant across edits elsewhere in the file: its function and its line's text."""
        return (self.target, self.function, self.code, self.mutated)


def _functions(tree: ast.Module) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of every top-level function and every method (Class.method)."""
    spans = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans.append((node.lineno, node.end_lineno, node.name))
        elif isinstance(node, ast.ClassDef):
            spans += [(m.lineno, m.end_lineno, f"{node.name}.{m.name}") for m in node.body
                      if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return spans


def _function_at(spans, lineno: int) -> str | None:
    return next((name for first, last, name in spans if first <= lineno <= last), None)


def _operator_names() -> list[str]:
    import cosmic_ray.plugins

    wanted = re.compile("|".join(f"(?:{o})" for o in OPERATORS))
    return [n for n in cosmic_ray.plugins.operator_names() if wanted.fullmatch(n)]


def enumerate_mutants(target: Target, every: int = 1) -> tuple[list[Mutant], dict]:
    """Every `every`-th mutant cosmic-ray's selected operators make of the target (in its order), with the
    mutated code of each."""
    import cosmic_ray.plugins
    from cosmic_ray.ast import ast_nodes, get_ast_from_path
    from cosmic_ray.mutating import mutate_code

    path = ROOT / target.path
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    spans = _functions(ast.parse(source))
    mutants, codes, counted = [], {}, 0
    for name in _operator_names():
        operator = cosmic_ray.plugins.get_operator(name)()
        module_ast = get_ast_from_path(path)
        positions = [start for node in ast_nodes(module_ast) for start, _ in operator.mutation_positions(node)]
        for occurrence, (lineno, _col) in enumerate(positions):
            counted += 1
            if (counted - 1) % every:
                continue
            mutated = mutate_code(source, operator, occurrence)
            if mutated is None:
                continue
            new_lines = mutated.splitlines()
            changed = new_lines[lineno - 1].strip() if len(new_lines) == len(lines) else "(several lines)"
            function = _function_at(spans, lineno)
            m = Mutant(target.name, name, occurrence, lineno, function, chapters_of(target, function)[0],
                       lines[lineno - 1].strip(), changed)
            mutants.append(m)
            codes[id(m)] = mutated
    target_counts[target.name] = counted
    return mutants, codes


target_counts: dict[str, int] = {}  # name -> how many mutants the last enumeration of it counted


def _host_source(target: Target, mutated_path: Path) -> str:
    """The host implementation's text, with the mutated helper loaded in place of `target.module` first."""
    prelude = (
        "import importlib.util as _mutation_util, sys as _mutation_sys\n"
        f"_mutation_spec = _mutation_util.spec_from_file_location({target.module!r}, {str(mutated_path)!r})\n"
        "_mutation_module = _mutation_util.module_from_spec(_mutation_spec)\n"
        f"_mutation_sys.modules[{target.module!r}] = _mutation_module\n"
        "_mutation_spec.loader.exec_module(_mutation_module)\n"
    )
    host = (ROOT / target.host).read_text(encoding="utf-8")
    tree = ast.parse(host)
    first = next(n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))  # after the docstring
    lines = host.splitlines(keepends=True)
    return "".join(lines[: first.lineno - 1]) + prelude + "".join(lines[first.lineno - 1:])


def _write(folder: Path, index: int, mutant: Mutant, code: str) -> Path:
    """The file --impl gets (m<index>.py, a name unique in the run): the mutated target itself, or its host
    loading the mutated helper (written beside it)."""
    target = TARGETS[mutant.target]
    impl = folder / f"m{index:04d}.py"
    if target.host is None:
        impl.write_text(code, encoding="utf-8")
        return impl
    helper = folder / f"m{index:04d}{Path(target.path).name}"
    helper.write_text(code, encoding="utf-8")
    impl.write_text(_host_source(target, helper), encoding="utf-8")
    return impl


def run_batch(chapters: tuple, impls: list[Path], folder: Path) -> dict[str, tuple[str, str | None]]:
    """Run the chapters' test modules once against every file in `impls`; stem -> (outcome, first failure).

    Killed: some test failed for it (or a function it must have broke). Survived: none did."""
    modules = [f"spec_tests/test_{c}.py" for c in chapters]
    report = folder / f"report_{impls[0].stem}.json"
    cmd = [sys.executable, "-m", "pytest", *modules, "--impl", ",".join(map(str, impls)), *PYTEST_ARGS,
           "--spec-report", str(report)]
    env = {**os.environ, "CI": "1", "MHA_SPEC_NO_REPRO": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    for name in ("MHA_SPEC_IMPL", "MHA_SPEC_MEASUREMENTS", "MHA_SPEC_PROFILE"):
        env.pop(name, None)
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S * len(impls),
                              env=env)
    except subprocess.TimeoutExpired:
        return {p.stem: ("timeout", None) for p in impls}
    if not report.exists():
        tail = (proc.stdout + proc.stderr)[-2000:]
        raise RuntimeError(f"the suite wrote no report (exit {proc.returncode}):\n{tail}")
    records = json.loads(report.read_text())["tests"]
    out = {}
    for p in impls:
        mine = [r for r in records if r["impl"] == p.stem]
        bad = [r for r in mine if r["outcome"] == "failed" or r.get("failed_run")]
        if not mine:
            out[p.stem] = ("error", None)  # never ran: it did not load
        else:
            out[p.stem] = ("killed", bad[0]["nodeid"].split("::")[-1]) if bad else ("survived", None)
    return out


def equivalent_keys() -> dict[tuple, str]:
    """(target, function, code, mutated) -> reason, from tests/mutation/equivalent.toml."""
    doc = tomllib.loads(EQUIVALENT.read_text(encoding="utf-8")) if EQUIVALENT.exists() else {}
    return {(e["target"], e["function"], e["code"], e["mutated"]): e["reason"] for e in doc.get("mutant", [])}


def checkpoint(mutants: list) -> None:
    """Append the outcomes of a finished batch to PROGRESS, each with its file's hash and the commit."""
    PROGRESS.parent.mkdir(parents=True, exist_ok=True)
    commit = _commit()
    with PROGRESS.open("a", encoding="utf-8") as out:
        for m in mutants:
            out.write(json.dumps({**asdict(m), "sha256": _sha(TARGETS[m.target].path), "commit": commit}) + "\n")


def resumed(mutants: list) -> tuple[list, set]:
    """Fill in the outcomes PROGRESS holds for these mutants (same key, same file contents); (the mutants still to
    run, the commits the reused outcomes were measured at)."""
    if not PROGRESS.exists():
        return mutants, set()
    sha = {name: _sha(t.path) for name, t in TARGETS.items() if (ROOT / t.path).exists()}
    done = {}
    for line in PROGRESS.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r.get("before") and r["sha256"] == sha.get(r["target"]):
            done[(r["target"], r["function"], r["code"], r["mutated"])] = r
    todo, commits = [], set()
    for m in mutants:
        r = done.get(m.key)
        if r is None:
            todo.append(m)
        else:
            m.before, m.failed = r["before"], r["failed"]
            commits.add(r["commit"])
    print(f"resumed: {len(mutants) - len(todo)} outcomes reused, {len(todo)} mutants to run", flush=True)
    return todo, commits


def _run_all(mutants, codes, jobs: int, field: str, batch: int = 40, record: bool = False) -> None:
    """Each mutant's outcome into m.<field>: mutants grouped by the chapters they run, `batch` per pytest run;
    `record`: each batch's outcomes appended to PROGRESS as it ends."""
    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(mutants):
        groups.setdefault(chapters_of(TARGETS[m.target], m.function), []).append(i)
    with tempfile.TemporaryDirectory(prefix="mut_") as tmp:
        folder = Path(tmp)
        paths = {i: _write(folder, i, m, codes[id(m)]) for i, m in enumerate(mutants)}
        jobs_list = [(ch, idx[k:k + batch]) for ch, idx in groups.items() for k in range(0, len(idx), batch)]

        def work(job):
            chapters, idx = job
            started = time.time()
            result = run_batch(chapters, [paths[i] for i in idx], folder)
            for i in idx:
                outcome, failed = result[paths[i].stem]
                setattr(mutants[i], field, outcome)
                mutants[i].failed = failed or mutants[i].failed
            if record:
                checkpoint([mutants[i] for i in idx])
            counts = {o: sum(1 for i in idx if getattr(mutants[i], field) == o) for o in ("killed", "survived")}
            print(f"{len(idx)} mutants through {', '.join(chapters)}: {counts} in {time.time() - started:.0f} s",
                  flush=True)

        with ThreadPoolExecutor(jobs) as pool:
            list(pool.map(work, jobs_list))


def _sha(path: str) -> str:
    return hashlib.sha256((ROOT / path).read_bytes()).hexdigest()[:16]


def _commit() -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return proc.stdout.strip()


def full_run(names: list[str], jobs: int, every: int = 1, resume: bool = False) -> None:
    """Run the targets' mutants (every `every`-th of each, in cosmic-ray's order, when every > 1); `resume`: reuse
    the outcomes PROGRESS recorded for them."""
    mutants, codes, total = [], {}, {}
    for name in names:
        ms, cs = enumerate_mutants(TARGETS[name], every)
        total[name] = target_counts[name]
        mutants += ms
        codes.update(cs)
    started = time.time()
    todo, commits = resumed(mutants) if resume else (mutants, set())
    _run_all(todo, codes, jobs, "before", record=True)
    commit = ", ".join(sorted(commits | {_commit()}))
    old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"mutants": [], "targets": {}}
    kept = [m for m in old["mutants"] if m["target"] not in names]
    doc = {
        "tool": "cosmic-ray", "version": version("cosmic-ray"), "operators": list(OPERATORS),
        "profile": "ci", "pytest": " ".join(["pytest", "spec_tests/test_<chapter>.py ...", "--impl <mutant>",
                                             *PYTEST_ARGS]),
        "targets": {**old.get("targets", {}),
                    **{n: {"path": TARGETS[n].path, "sha256": _sha(TARGETS[n].path), "commit": commit,
                           "seconds": round(time.time() - started), "generated": total[n], "every": every}
                       for n in names}},
        "mutants": kept + [asdict(m) for m in mutants],
    }
    RESULTS.write_text(json.dumps(doc, indent=1) + "\n")


def rerun_survivors(jobs: int) -> None:
    """Run again the mutants recorded as surviving; their outcome now is `after` (killed ones stay killed)."""
    doc = json.loads(RESULTS.read_text())
    fresh = {}
    for name in {m["target"] for m in doc["mutants"]}:
        ms, cs = enumerate_mutants(TARGETS[name], doc["targets"][name].get("every", 1))
        fresh.update({m.key: (m, cs[id(m)]) for m in ms})
    again, codes = [], {}
    for record in doc["mutants"]:
        if record["before"] == "killed":
            record["after"] = "killed"
            continue
        m = Mutant(**record)
        target = TARGETS[m.target]
        if target.chapters and m.function not in target.chapters:  # no chapter claims it: not worth a rerun
            record["after"] = record["before"]
            continue
        if m.key not in fresh:
            record["after"] = "gone"  # the line changed since the run: no longer a mutant of this file
            continue
        m2, code = fresh[m.key]
        again.append(m2)
        codes[id(m2)] = code
    _run_all(again, codes, jobs, "after")
    outcome = {m.key: (m.after, m.failed) for m in again}
    for record in doc["mutants"]:
        key = (record["target"], record["function"], record["code"], record["mutated"])
        if key in outcome:
            record["after"], record["failed"] = outcome[key]
    doc["after_commit"] = _commit()
    RESULTS.write_text(json.dumps(doc, indent=1) + "\n")


def sample(names: list[str], every: int) -> tuple[list[Mutant], dict]:
    """Every `every`-th mutant of the targets in enumeration order, and every mutant a new test closed."""
    doc = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"mutants": []}
    closed = {(m["target"], m["function"], m["code"], m["mutated"]) for m in doc["mutants"]
              if m["before"] == "survived" and m.get("after") == "killed"}
    chosen, codes = [], {}
    for name in names:
        stride = doc.get("targets", {}).get(name, {}).get("every", 1)  # the recorded run's mutants only
        if every % stride:
            raise ValueError(f"--sample {every} must be a multiple of the recorded run's stride {stride} ({name})")
        ms, cs = enumerate_mutants(TARGETS[name], stride)
        for i, m in enumerate(ms):
            if (i * stride) % every == 0 or m.key in closed:
                chosen.append(m)
                codes[id(m)] = cs[id(m)]
    return chosen, codes


def check_sample(names: list[str], every: int, jobs: int) -> int:
    mutants, codes = sample(names, every)
    equivalent = equivalent_keys()
    mutants = [m for m in mutants if m.key not in equivalent]
    print(f"mutation sample: {len(mutants)} mutants that are not listed as equivalent", flush=True)
    _run_all(mutants, codes, jobs, "before")
    doc = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"mutants": []}
    open_ = {(r["target"], r["function"], r["code"], r["mutated"]) for r in doc["mutants"]
             if (r.get("after") or r["before"]) == "survived"}  # docs/validation.md lists them as survivors
    alive = [m for m in mutants if m.before not in ("killed", "timeout")]
    for m in [m for m in alive if m.key in open_]:
        print(f"still open (listed on docs/validation.md): {m.target}.{m.function} line {m.lineno}", flush=True)
    alive = [m for m in alive if m.key not in open_]
    for m in alive:
        print(f"SURVIVED ({m.before}): {m.target}.{m.function} line {m.lineno}: {m.code!r} -> {m.mutated!r}; "
              f"chapters {', '.join(chapters_of(TARGETS[m.target], m.function))}", flush=True)
    return 1 if alive else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default="numpy_fast,torch_naive")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sample", type=int, default=0, help="every Nth mutant only")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--rerun-survivors", action="store_true")
    parser.add_argument("--resume", action="store_true", help="reuse the outcomes build/mutation/progress.jsonl holds")
    args = parser.parse_args(argv)
    names = [n for n in args.targets.split(",") if n]
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        raise ValueError(f"unknown mutation target(s) {unknown}; known: {sorted(TARGETS)}")
    if args.check:
        return check_sample(names, max(args.sample, 1), args.jobs)
    if args.rerun_survivors:
        rerun_survivors(args.jobs)
    else:
        full_run(names, args.jobs, max(args.sample, 1), args.resume)
    return 0


if __name__ == "__main__":
    sys.exit(main())
