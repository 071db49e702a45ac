"""docs/validation.md: the suite tried against generated mutants, from the committed results of a run.

`python -m tests.mutation.run` (tests/mutation/) generates mutants of the implementations a learner writes
with cosmic-ray's operators, runs each through the chapters that concern it and writes
docs_gen/data/mutation.json; tests/mutation/equivalent.toml lists the survivors that compute the same
function as the original. This module renders both, deterministically (no run):

    docs/validation.md                           the report: tool, mutants, killed, equivalent, survivors
    docs_gen/fragments/mutation.kill_rate.md     the kill rate per chapter, included by docs/bugs.md

A mutant's kill rate counts the mutants that are not equivalent: killed / (mutants - equivalent), BEFORE
(the run over the suite as it was) and AFTER (the survivors run again once the tests closing them existed).
"""

from __future__ import annotations

import json
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

import docs_gen
from docs_gen import DOCS, FRAGMENTS, GENERATED_NOTE, ROOT
from spec_tests.harness import claims as catalogue

DATA = ROOT / "docs_gen" / "data" / "mutation.json"
EQUIVALENT = ROOT / "tests" / "mutation" / "equivalent.toml"
PAGE = DOCS / "validation.md"
FRAGMENT = FRAGMENTS / "mutation.kill_rate.md"
KILLED = ("killed", "timeout")  # a mutant that never finishes is caught too (cosmic-ray's own rule)


def key(m: dict) -> tuple:
    return (m["target"], m["function"], m["code"], m["mutated"])


def load() -> tuple[dict, dict[tuple, str]]:
    """(the results file, equivalent mutant key -> reason)."""
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    eq = tomllib.loads(EQUIVALENT.read_text(encoding="utf-8")) if EQUIVALENT.exists() else {}
    return doc, {(e["target"], e["function"], e["code"], e["mutated"]): e["reason"] for e in eq.get("mutant", [])}


def verdict(m: dict, equivalent: dict, phase: str) -> str:
    """killed, equivalent or survived, for phase 'before' or 'after' (after falls back to before)."""
    outcome = m.get(phase) or m["before"]
    if outcome in KILLED:
        return "killed"
    return "equivalent" if key(m) in equivalent else "survived"


def tally(mutants: list[dict], equivalent: dict) -> dict:
    """Counts of one group of mutants: total, killed before/after, equivalent, survivors after."""
    before = Counter(verdict(m, equivalent, "before") for m in mutants)
    after = Counter(verdict(m, equivalent, "after") for m in mutants)
    return {"mutants": len(mutants), "killed_before": before["killed"], "killed_after": after["killed"],
            "equivalent": after["equivalent"], "survived_before": before["survived"] + before["equivalent"]
            - after["equivalent"], "survived_after": after["survived"]}


def rate(killed: int, t: dict) -> str:
    denominator = t["mutants"] - t["equivalent"]
    return f"{100 * killed / denominator:.1f}%" if denominator else "n/a"


def _row(label: str, t: dict) -> str:
    return (f"| {label} | {t['mutants']} | {t['killed_after']} | {t['equivalent']} | {t['survived_after']} | "
            f"{rate(t['killed_before'], t)} | {rate(t['killed_after'], t)} |")


HEAD = ["| | mutants | killed | equivalent | survivors | kill rate before | kill rate after |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]


def chapter_rows(mutants: list[dict], equivalent: dict) -> list[str]:
    chapters = catalogue.chapters()
    by = defaultdict(list)
    for m in mutants:
        by[m["chapter"]].append(m)
    order = [c for c in chapters if c in by] + sorted(c for c in by if c not in chapters)
    return [_row(f"[{chapters[c].title}]({chapters[c].page})" if c in chapters else c, tally(by[c], equivalent))
            for c in order]


def _code(s: str) -> str:
    return "`" + s.replace("`", "'").replace("|", "\\|") + "`"


def _mutant_line(m: dict) -> str:
    return f"`{m['target']}.{m['function']}` (line {m['lineno']}): {_code(m['code'])} → {_code(m['mutated'])}"


def _extent(t: dict) -> str:
    """How much of a file's mutants the run ran: all of them, or every Nth."""
    every, generated = t.get("every", 1), t.get("generated", "?")
    return (f"`{t['path']}` all {generated} mutants" if every == 1 else
            f"`{t['path']}` every {every}th of its {generated} mutants")


def _intro(doc: dict) -> list[str]:
    targets = doc["targets"]
    files = ", ".join(f"`{t['path']}`" for t in targets.values())
    return [
        "The suite's own known bugs (the [bug catalogue](bugs.md)) were written by the people who wrote the",
        "suite. Here the bugs are generated instead: a mutation-testing tool makes every small change its",
        "operators allow to the implementations a learner would write, and the suite runs against each",
        "changed copy. A mutant the suite fails is *killed*. One it passes either computes the same",
        "function as the original (*equivalent*; each one below says why, and a reader can check it), or",
        "shows a bug the suite missed: it is closed by a new example or assertion in the chapter's tests,",
        "or listed under *Survivors* until it is.", "",
        f"**Tool:** {doc['tool']} {doc['version']}, chosen over mutmut because its operators and `mutate_code`",
        "can be used as a library: each mutant is written to a file of its own outside the repository and",
        "handed to the suite with `--impl`, which is how the suite takes a learner's file. mutmut 3 rewrites",
        "the package under test in its own copy of the project and runs the tests inside it, and the suite",
        "does not import the implementation it judges as a package.", "",
        f"**Mutated:** {files}. A helper module is mutated in a copy and loaded in place of the",
        "original by a copy of the implementation that uses it. **Run:** " + "; ".join(map(_extent, targets.values()))
        + ", in cosmic-ray's order (`--sample N` runs every Nth, no option all of them).", "",
        "**Operators** (cosmic-ray's core operators, restricted to the slips a learner makes: a changed",
        "constant, `+` for `-`, `*` for `/`, a moved boundary, a negation added or dropped; swaps that can only",
        "raise a TypeError on arrays are left out): " + ", ".join(f"`{o}`" for o in doc["operators"]) + ".", "",
        f"**How each mutant runs:** `{doc['pytest']}`, in the `{doc['profile']}` Hypothesis profile, through",
        "the test modules of the chapters whose claims call the mutated function (tests/mutation/targets.py),",
        "many mutants per pytest run. A mutant is listed under the first of those chapters.", "",
        "**Kill rate** = killed / (mutants − equivalent). *Before*: the run over the suite as it was",
        f"(commit {', '.join(sorted({t['commit'] for t in targets.values()}))}); *after*: the surviving mutants run",
        f"again with the tests that close them (commit {doc.get('after_commit', 'none yet')}).", "",
        "Reproduce: `python -m tests.mutation.run --targets " + ",".join(targets) + "` (each batch's outcomes",
        "are kept in `build/mutation/progress.jsonl`; `--resume` continues a stopped run), then",
        "`python -m tests.mutation.run --rerun-survivors`; CI runs a fixed sample (`.ci/mutation.sh`).", "",
    ]


def page(doc: dict, equivalent: dict) -> str:
    mutants = doc["mutants"]
    out = [GENERATED_NOTE.format(source="docs_gen/data/mutation.json and tests/mutation/equivalent.toml"), "",
           "# Validation: generated mutants", "", *_intro(doc)]
    out += ["## By file", "", *HEAD]
    for name, t in doc["targets"].items():
        mine = [m for m in mutants if m["target"] == name]
        out.append(_row(f"`{t['path']}`", tally(mine, equivalent)))
    out += [_row("**all**", tally(mutants, equivalent)), ""]
    out += ["## By chapter", "", *HEAD, *chapter_rows(mutants, equivalent), ""]
    closed = [m for m in mutants if m["before"] not in KILLED and m.get("after") in KILLED]
    out += ["## Closed by new tests", "",
            f"{len(closed)} mutants survived the suite as it was and fail it now; the test that catches each:", ""]
    out += [f"- {_mutant_line(m)}: `{m['failed'].split('[')[0]}`" for m in closed] + [""]
    eq = [m for m in mutants if verdict(m, equivalent, "after") == "equivalent"]
    out += ["## Equivalent mutants", "", f"{len(eq)} mutants compute the same function as the original:", ""]
    out += [f"- {_mutant_line(m)}. {equivalent[key(m)]}" for m in eq] + [""]
    alive = [m for m in mutants if verdict(m, equivalent, "after") == "survived"]
    out += ["## Survivors", ""]
    out += (["None: every mutant that is not equivalent is killed in the `ci` profile.", ""] if not alive else
            [f"{len(alive)} mutants that are not shown equivalent still pass the suite (not done yet):", "",
             *[f"- {_mutant_line(m)}" for m in alive], ""])
    return "\n".join(out).rstrip() + "\n"


def fragment(doc: dict, equivalent: dict) -> str:
    """The per-chapter kill rate the bug catalogue shows, linking to the report."""
    t = tally(doc["mutants"], equivalent)
    return "\n".join([
        f"Beyond these hand-written bugs, {t['mutants']} generated mutants of the implementations a learner",
        f"writes were run through the suite: {t['killed_after']} killed, {t['equivalent']} shown equivalent,",
        f"{t['survived_after']} surviving (the [mutation report](validation.md) lists each). Kill rate per chapter:",
        "", *HEAD, *chapter_rows(doc["mutants"], equivalent), ""])


def outputs() -> dict[Path, str]:
    if not DATA.exists():
        return {}
    doc, equivalent = load()
    return {PAGE: page(doc, equivalent), FRAGMENT: fragment(doc, equivalent)}


def write_all() -> list[Path]:
    return [docs_gen.write_output(path, content) for path, content in outputs().items()]
