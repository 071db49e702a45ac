"""Example counts: each claim's tests draw what the kill-rate study chose (docs_gen/kill_rate.py, its data in
docs_gen/data/kill_rate.json, the counts in spec_tests/claims.toml), a run draws it, and MHA_SPEC_EXAMPLES
overrides it."""

import json
import re

import pytest

from docs_gen import kill_rate
from spec_tests.harness import claims
from tests.helpers import run_suite



def test_each_claim_draws_what_the_kill_rate_study_chose():
    data = json.loads(kill_rate.DATA.read_text())
    held = {c.id: c.examples for c in claims.catalogue().values() if c.examples is not None}
    assert held == kill_rate.chosen_counts(data), "spec_tests/claims.toml's `examples` should be what the study chose"


def test_every_chapter_with_a_known_bug_was_measured():
    measured = set(json.loads(kill_rate.DATA.read_text())["plan"])
    assert set(kill_rate.plan()) <= measured, "a chapter gained known bugs: rerun `python -m docs_gen.kill_rate`"


@pytest.mark.parametrize("env, expected", [
    ({}, claims.get("SDPA-1").examples or 25),
    ({"MHA_SPEC_EXAMPLES": "3"}, 3),
    ({"MHA_SPEC_PROFILE": "grading"}, claims.get("SDPA-1").examples or 10),
], ids=["ci", "forced", "grading"])
def test_a_run_draws_its_claims_count(env, expected):
    code, out, _ = run_suite("--impl", "numpy_fast", "--claim", "SDPA-1", "--hypothesis-show-statistics", env=env)
    assert code == 0, out[-2000:]
    counts = set(re.findall(r"Stopped because settings.max_examples=(\d+)", out))
    assert counts == {str(expected)}, out[-3000:]


@pytest.mark.parametrize("chapter", sorted(kill_rate.plan()))
def test_a_learners_run_catches_every_known_bug_at_these_counts(chapter, tmp_path):
    """The learner's path, in-process and at the counts above (the ci profile, derandomised): each known
    bug of the chapter fails every claim it records (the grader's path is checked by test_mutants.py)."""
    bugs = kill_rate.plan([chapter])[chapter]
    run = kill_rate.run_chapter(chapter, bugs, None, None, tmp_path, profile="ci")
    missed = sorted(f"{b} ({c})" for b, cs in run["caught"].items() for c, hit in cs.items() if not hit)
    assert not missed, f"not caught in a ci run of test_{chapter}.py: {missed}"
