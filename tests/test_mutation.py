"""The mutation report agrees with its data: the results file, the equivalence list and docs/validation.md.

The run itself (tests/mutation/run.py) takes long and runs in CI in its reduced form (.ci/mutation.sh); these
checks read what it committed: every equivalent mutant is one the run saw survive, with a reason; the page and
the bug catalogue's fragment are what docs_gen/validation.py renders from the two; the counts add up.
"""

from __future__ import annotations

import json
import tomllib

import pytest

from docs_gen import validation
from spec_tests.harness import claims as catalogue
from tests.mutation.targets import TARGETS

OUTCOMES = {"killed", "survived", "timeout", "error", "gone", None}


@pytest.fixture(scope="module")
def data():
    if not validation.DATA.exists():
        pytest.fail(f"no mutation results at {validation.DATA}: run python -m tests.mutation.run")
    return validation.load()


def test_every_recorded_mutant_is_complete(data):
    doc, _ = data
    assert doc["tool"] == "cosmic-ray" and doc["version"]
    assert doc["mutants"], "the results file records no mutant"
    for m in doc["mutants"]:
        assert m["target"] in TARGETS and m["target"] in doc["targets"], m
        assert m["before"] in OUTCOMES - {None} and m.get("after") in OUTCOMES, m
        assert m["code"] != m["mutated"], f"a mutant that changes nothing: {m}"


def test_every_equivalent_mutant_was_seen_surviving_and_says_why(data):
    doc, equivalent = data
    seen = {validation.key(m): m for m in doc["mutants"]}
    entries = tomllib.loads(validation.EQUIVALENT.read_text(encoding="utf-8")).get("mutant", [])
    assert len(entries) == len(equivalent), "two entries of tests/mutation/equivalent.toml name the same mutant"
    for k, reason in equivalent.items():
        assert k in seen, f"tests/mutation/equivalent.toml lists a mutant the results file does not have: {k}"
        assert seen[k]["before"] == "survived" and seen[k].get("after") in (None, "survived"), \
            f"listed as equivalent but killed by the suite: {k}"
        assert len(reason.split()) >= 5, f"say why {k} is equivalent, in a sentence: {reason!r}"


def test_counts_add_up(data):
    doc, equivalent = data
    for name in doc["targets"]:
        t = validation.tally([m for m in doc["mutants"] if m["target"] == name], equivalent)
        assert t["killed_after"] + t["equivalent"] + t["survived_after"] == t["mutants"], (name, t)
        assert t["killed_before"] <= t["killed_after"], (name, t)


def test_page_and_fragment_are_rendered_from_the_data(data):
    doc, equivalent = data
    assert validation.PAGE.read_text(encoding="utf-8") == validation.page(doc, equivalent), \
        "docs/validation.md is stale: run python -m docs_gen"
    assert validation.FRAGMENT.read_text(encoding="utf-8") == validation.fragment(doc, equivalent), \
        f"{validation.FRAGMENT} is stale: run python -m docs_gen"


def test_the_chapters_each_function_runs_are_chapters():
    chapters = set(catalogue.chapters())
    for target in TARGETS.values():
        for function, names in [*target.chapters.items(), (None, target.default)]:
            unknown = set(names) - chapters
            assert not unknown, f"{target.name}.{function}: no such chapter {sorted(unknown)}"
            assert len(set(names)) == len(names), f"{target.name}.{function} lists a chapter twice"


def test_results_name_functions_of_their_files(data):
    """A recorded mutant's line is in its file's recorded version, or the file changed since the run."""
    doc, _ = data
    for name, t in doc["targets"].items():
        assert t["path"] == TARGETS[name].path
        assert t["generated"] >= sum(1 for m in doc["mutants"] if m["target"] == name)
        json.dumps(t)  # plain data


def test_a_stopped_run_resumes_from_the_outcomes_it_recorded(tmp_path, monkeypatch):
    """Each batch's outcomes are appended to the progress file; --resume reuses those of the same file contents
    and runs only the rest (a full run takes longer than one sitting on a shared machine)."""
    from tests.mutation import run

    monkeypatch.setattr(run, "PROGRESS", tmp_path / "progress.jsonl")
    monkeypatch.setattr(run, "_commit", lambda: "abc1234")

    def mutant(n, outcome=None):
        return run.Mutant("numpy_fast", "core/NumberReplacer", n, 10 + n, "layer_norm", "layer_norm",
                          f"x = {n}", f"x = {n + 1}", before=outcome, failed="test_x" if outcome == "killed" else None)

    run.checkpoint([mutant(0, "killed"), mutant(1, "survived")])
    fresh = [mutant(0), mutant(1), mutant(2)]
    todo, commits = run.resumed(fresh)
    assert [m.occurrence for m in todo] == [2] and commits == {"abc1234"}
    assert (fresh[0].before, fresh[0].failed, fresh[1].before) == ("killed", "test_x", "survived")

    lines = run.PROGRESS.read_text().splitlines()  # the file changed since: nothing recorded for it is reused
    run.PROGRESS.write_text("".join(line.replace(run._sha("impls/numpy_fast.py"), "0" * 16) + "\n" for line in lines))
    todo, commits = run.resumed([mutant(0), mutant(1)])
    assert len(todo) == 2 and not commits
