"""The measurements behind the docs cover the whole catalogue of known bugs (impls/mutants/): the kill-rate
study (docs_gen/data/kill_rate.json, which chooses each claim's example count in claims.toml) and the run of
the whole suite against each bug (docs_gen/data/mutant_claims.after.json, the bug catalogue's table and each
claim's list of the bugs that fail it). A bug added without a rerun fails here, with the command to run."""

import json

import pytest

from docs_gen import kill_rate
from docs_gen.mutant_claims import measured_failures
from impls import mutants as known_bugs


# Both studies cover every known bug (the whole-suite run of all 101 re-measured 01:26-01:46 UTC, 2 Dec; the kill-rate
# study's four new or moved bugs 01:28-01:33:
# `python -m docs_gen.kill_rate --missing`, `python -m docs_gen.mutant_claims --missing --merge`).


def test_the_kill_rate_study_measured_every_known_bug_on_each_of_its_claims():
    missing = kill_rate.unmeasured(json.loads(kill_rate.DATA.read_text()))
    assert not missing, ("known bugs (or claims of theirs) that the kill-rate study never ran, so the example "
                         f"counts were not chosen with them: {missing}; measure them with "
                         "`python -m docs_gen.kill_rate --missing` (merged into docs_gen/data/kill_rate.json)")


def test_the_whole_suite_was_run_against_every_known_bug():
    missing = sorted(set(known_bugs.names()) - set(measured_failures()))
    assert not missing, (f"known bugs without a row in docs_gen/data/mutant_claims.after.json: {missing}; run "
                         f"`python -m docs_gen.mutant_claims --only {','.join(missing)}` and add its rows")


def test_no_measurement_keeps_a_bug_the_catalogue_no_longer_has():
    names = set(known_bugs.names())
    in_study = {b for bugs in json.loads(kill_rate.DATA.read_text())["plan"].values() for b in bugs}
    assert not in_study - names, f"docs_gen/data/kill_rate.json measures bugs that are gone: {in_study - names}"
    assert not set(measured_failures()) - names, \
        f"mutant_claims.after.json has rows of bugs that are gone: {set(measured_failures()) - names}"


def _data(caught_a, caught_b=None, counts=(1, 2)):
    runs = [{"chapter": "sdpa", "count": n, "seed": 0, "caught": {"a": {"SDPA-1": caught_a}}, "seconds": 1.0}
            for n in counts]
    data = {"counts": list(counts), "samples": 1, "plan": {"sdpa": {"a": ["SDPA-1"]}}, "runs": runs,
            "seconds": 2, "date": "d0", "commit": "c0"}
    if caught_b is not None:
        data["plan"] = {"sdpa": {"b": ["SDPA-2"]}}
        for r in runs:
            r["caught"] = {"b": {"SDPA-2": caught_b}}
        data.update(date="d1", commit="c1")
    return data


def test_a_merge_adds_the_new_bugs_to_the_runs_of_the_same_count_and_sample():
    merged = kill_rate.merge(_data(True), _data(None, caught_b=False))
    assert merged["plan"] == {"sdpa": {"a": ["SDPA-1"], "b": ["SDPA-2"]}}
    assert len(merged["runs"]) == 2
    assert all(r["caught"] == {"a": {"SDPA-1": True}, "b": {"SDPA-2": False}} for r in merged["runs"])
    assert kill_rate.claim_needs(merged) == {"SDPA-1": 1, "SDPA-2": None}
    with pytest.raises(ValueError, match="needs the committed counts"):
        kill_rate.merge(_data(True), _data(None, caught_b=True, counts=(1, 4)))
