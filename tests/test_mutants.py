"""The suite against known bugs (impls/mutants/): each mutant is caught, by the claim its docstring names
and by the further claims it records (ALSO_CAUGHT_BY), and the correct base they are built on passes
every claim. Each mutant is graded once per session (conftest.py's `mutant_grades`, shared with
test_grading.py, which checks that its feedback names the bug); this module reads that grade.

The mutants are read statically (by the catalogue's one reader, impls/mutants/__init__.py) so that
collecting these tests needs no torch: a mutant that imports torch is skipped as unavailable where
torch is missing, with the reason.
"""

from functools import cache

import pytest

from impls import mutants as known_bugs
from tests.helpers import MUTANTS_DIR, missing_packages, mutant_needs, run_suite

MUTANTS = known_bugs.names()


def test_the_catalogue_holds_at_least_twenty_bugs():
    assert len(MUTANTS) >= 20, MUTANTS


@pytest.mark.parametrize("name", MUTANTS)
def test_each_mutant_documents_its_bug_and_claim(name):
    from spec_tests.harness import claims

    known = known_bugs.read(name)
    doc, bug, caught_by = known.doc, known.attributes.get("BUG"), known.attributes.get("CAUGHT_BY")
    assert doc and bug and caught_by in claims.catalogue(), name
    assert caught_by in doc, f"{name}'s docstring should name {caught_by}"
    also = known.attributes.get("ALSO_CAUGHT_BY", ())  # further claims the bug fails, checked like CAUGHT_BY
    assert isinstance(also, tuple) and set(also) <= set(claims.catalogue()), (name, also)
    same = known.attributes.get("SAME_BUG_AS")  # one bug written twice: the other exists and fails the same claim
    if same is not None:
        assert same in MUTANTS and known_bugs.read(same).attributes.get("CAUGHT_BY") == caught_by, (name, same)


@cache
def _by_claim() -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for known in known_bugs.catalogue():
        for claim_id in known.claims:
            groups.setdefault(claim_id, []).append(known.name)
    return groups


# Implementation claims that no known bug is recorded to fail yet (CAUGHT_BY or ALSO_CAUGHT_BY). The list
# may only shrink: a claim that gains a mutant must leave it, and a new implementation claim needs one.
UNCOVERED = {
    "SDPA-6", "SDPA-7", "MHA-7", "VAR-2", "VAR-4", "LN-8", "RES-1", "RES-3", "EFF-1", "EFF-2", "EFF-3",
    "GRAD-1",
}


def test_every_implementation_claim_is_failed_by_a_known_bug():
    """Each claim an implementation is judged by (a test of a chapter module taking `impl`, not slow, not a
    demonstration) is failed by at least one mutant, by its CAUGHT_BY or ALSO_CAUGHT_BY, which
    test_each_mutant_is_caught_by_its_claim checks by running it."""
    from grader.rubric import tested_claims
    from spec_tests.harness import claims

    judged = {c for c in tested_claims() if not claims.get(c).demonstration}
    covered = set(_by_claim())
    missing = sorted(judged - covered - UNCOVERED, key=list(claims.catalogue()).index)
    stale = sorted(UNCOVERED & covered)
    assert not missing, f"implementation claims no known bug fails: {missing} (add a mutant to impls/mutants/)"
    assert not stale, f"claims now covered by a mutant: remove them from UNCOVERED: {stale}"


@pytest.mark.parametrize("claim_id", sorted(_by_claim()))
def test_each_mutant_is_caught_by_its_claim(claim_id, mutant_grades):
    """Every mutant that names the claim (and can run here) fails it when graded: each mutant is graded
    once per session, on the claims it names (grading_helpers.grade_mutant), and this test and
    test_grading's read the same grade."""
    from tests.grading_helpers import results

    names = [n for n in _by_claim()[claim_id] if not missing_packages(mutant_needs(n))]
    if not names:
        pytest.skip(f"unavailable: the mutants of {claim_id} need {missing_packages(['torch', 'triton'])}")
    missed, logs = {}, []
    for name in names:
        code, log, out = mutant_grades(name)
        assert code == 0, f"grading {name} failed:\n{log[-3000:]}"
        status = {t["tags"][1]: t["extra_data"]["claim_status"] for t in results(out)["tests"]}.get(claim_id)
        if status not in ("failed", "partly passed"):
            missed[name] = status
            logs.append((out / "feedback.md").read_text()[-2000:])
    bugs = {n: known_bugs.read(n).bug for n in missed}
    assert not missed, f"mutants not caught by {claim_id}: {missed}\n{bugs}\n" + "\n".join(logs)


def test_the_correct_base_passes_every_claim(tmp_path):
    """The base implements the whole contract, later chapters included: every claim passes or does not
    apply. "not implemented" is not accepted, so a test calling a misspelt function name fails here."""
    code, out, report = run_suite("--impl", str(MUTANTS_DIR / "_base.py"), report=tmp_path / "r.json")
    assert code == 0, out[-5000:]
    bad = {c: s for c, per in report["claims"].items() for s in per.values() if s not in ("passed", "not applicable")}
    assert not bad, bad
    not_applicable = {t["nodeid"]: t["message"] for t in report["tests"] if t["outcome"] == "not applicable"}
    wrong = {n: m for n, m in not_applicable.items() if "has no function" in m or "takes no keyword" in m}
    assert not wrong, wrong
