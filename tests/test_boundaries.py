"""The boundary inputs (spec_tests/harness/boundaries.py): declared where they can be drawn, run on every run.

Every claim whose tests can draw a boundary declares it in claims.toml, so a new test or claim cannot
forget one; every declared boundary is drawn by at least one of the claim's tests, so no declaration is
hollow; and a bug that is wrong only at a boundary is caught with one drawn example (MHA_SPEC_EXAMPLES=1),
because the boundary runs before it.
"""

import importlib
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spec_tests.harness import boundaries, claims

ROOT = Path(__file__).resolve().parents[1]


def _chapter_tests():
    """(claim IDs, test name, @given strategies, module globals) of every Hypothesis test of every chapter."""
    for chapter in claims.chapters().values():
        module = importlib.import_module(f"spec_tests.{Path(chapter.module).stem}")
        for name, fn in vars(module).items():
            found = boundaries.given_of(fn)
            if found is None or not name.startswith("test_"):
                continue
            ids = [c for mark in getattr(fn, "pytestmark", []) if mark.name == "claim" for c in mark.args]
            yield ids, f"{chapter.module}::{name}", *found


def _drawable():
    """claim -> {boundary: [tests that can draw it]}."""
    out: dict = {}
    for ids, test, given, namespace in _chapter_tests():
        draws = boundaries.Draws(given, namespace)
        for name, build in boundaries.BOUNDARIES.items():
            if build(draws) is not None:
                for claim in ids:
                    out.setdefault(claim, {}).setdefault(name, []).append(test)
    return out


def test_each_boundary_cites_its_clause_of_the_contract():
    for name, build in boundaries.BOUNDARIES.items():
        doc = inspect.getdoc(build) or ""
        assert "CONTRACT.md" in doc, f"boundary {name} has no docstring citing its clause of CONTRACT.md"


def test_declared_boundaries_exist():
    known = set(boundaries.BOUNDARIES)
    for claim in claims.catalogue().values():
        unknown = set(claim.boundaries) - known
        assert not unknown, f"{claim.id} declares boundaries that harness/boundaries.py does not define: {unknown}"


def test_every_claim_declares_each_boundary_its_tests_can_draw():
    missing = {claim: sorted(set(found) - set(claims.catalogue()[claim].boundaries))
               for claim, found in _drawable().items()}
    missing = {c: m for c, m in missing.items() if m}
    assert not missing, ("claims whose tests can draw a boundary they do not declare (add it to `boundaries` "
                         f"in spec_tests/claims.toml): {missing}")


def test_every_declared_boundary_is_drawn_by_a_test_of_its_claim():
    drawable = _drawable()
    hollow = {c.id: sorted(set(c.boundaries) - set(drawable.get(c.id, {})))
              for c in claims.catalogue().values() if c.boundaries}
    hollow = {c: h for c, h in hollow.items() if h}
    assert not hollow, f"declared boundaries that no test of the claim can draw: {hollow}"


def test_the_contracts_boundaries_are_each_declared_somewhere():
    """dead rows with and without a bias, L = 1, L_q != L_k both ways, G < H with masks, long rows in low
    precision (scores of 1e4: every draw of SDPA-5, LSE-1 and MASK-9 has them, no strategy draws them as an edge)."""
    declared = {b for c in claims.catalogue().values() for b in c.boundaries}
    wanted = set(boundaries.BOUNDARIES) - {"large_scores"}
    assert wanted <= declared, f"boundaries no claim declares: {sorted(wanted - declared)}"
    precision = {b for c in claims.catalogue().values() if c.chapter != "precision" for b in c.boundaries}
    assert "long_rows_low_precision" not in precision, "long rows in low precision belong to the precision claims"


def test_a_boundary_is_an_explicit_example_of_the_test():
    """attach() adds each declared boundary to the test's explicit examples, once, whatever the run does after."""
    from spec_tests import test_sdpa

    fn = test_sdpa.test_sdpa_matches_oracle
    given, namespace = boundaries.given_of(fn)
    found = dict(boundaries.examples_of(given, namespace, claims.get("SDPA-1").boundaries))
    assert set(found) == {"length_one", "lk_gt_lq", "lq_gt_lk"}
    cases = {name: ex["case"] for name, ex in found.items()}
    assert (cases["length_one"].L_q, cases["length_one"].L_k) == (1, 1)
    assert cases["lq_gt_lk"].L_q > cases["lq_gt_lk"].L_k and cases["lk_gt_lq"].L_q < cases["lk_gt_lq"].L_k


def test_a_dead_row_boundary_has_a_dead_row():
    from spec_tests import test_masks

    given, namespace = boundaries.given_of(test_masks.test_fully_masked_rows_stay_zero_with_a_bias)
    found = dict(boundaries.examples_of(given, namespace, ["dead_row", "dead_row_with_bias"]))
    assert set(found) == {"dead_row_with_bias"}, "a strategy drawing a bias is a dead row with a bias, not without"
    case = found["dead_row_with_bias"]["case"]
    assert case.bias and (~case.mask.any(axis=-1)).any() and case.mask.any(axis=-1).any()


# Known bugs wrong only at a boundary, and the claim each must fail with one drawn example.
BOUNDARY_BUGS = [
    ("dead_row_with_bias_mean_of_v", "MASK-4"),   # a dead row with a bias gives the mean of V
    ("single_key_skips_the_softmax", "MASK-4"),   # L_k = 1 with its only key hidden gives v
    ("gqa_mask_heads_regrouped", "MASK-5"),       # G < H with a mask per query head
]


@pytest.mark.parametrize("bug, claim", BOUNDARY_BUGS, ids=[b for b, _ in BOUNDARY_BUGS])
def test_a_boundary_bug_is_caught_with_one_drawn_example(bug, claim):
    """One drawn example per test, and the bug still fails its claim: on an explicit example, the boundary."""
    env = {**os.environ, "CI": "1", "MHA_SPEC_EXAMPLES": "1"}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--no-claim-summary",
           "--impl", str(ROOT / "impls" / "mutants" / f"{bug}.py"), "--claim", claim]
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, f"{bug} was not caught by {claim} with one example:\n{run.stdout[-3000:]}"
    assert f"{claim} does not hold" in run.stdout
    assert "Failing explicit example" in run.stdout, f"{bug} was caught by a drawn input, not a boundary"
