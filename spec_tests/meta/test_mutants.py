"""The suite against known bugs (impls/mutants/): each mutant is caught, by the claim its docstring names,
and the correct base they are built on passes every claim."""

import importlib

import pytest

from spec_tests.meta.helpers import ROOT, run_suite

MUTANTS_DIR = ROOT / "impls" / "mutants"
MUTANTS = sorted(p.stem for p in MUTANTS_DIR.glob("*.py") if not p.stem.startswith("_"))


def test_the_catalogue_holds_at_least_twenty_bugs():
    assert len(MUTANTS) >= 20, MUTANTS


@pytest.mark.parametrize("name", MUTANTS)
def test_each_mutant_documents_its_bug_and_claim(name):
    module = importlib.import_module(f"impls.mutants.{name}")
    from spec_tests.harness import claims

    assert module.__doc__ and module.BUG and module.CAUGHT_BY in claims.catalogue(), name
    assert module.CAUGHT_BY in module.__doc__, f"{name}'s docstring should name {module.CAUGHT_BY}"


@pytest.mark.parametrize("name", MUTANTS)
def test_each_mutant_is_caught_by_its_claim(name, tmp_path):
    module = importlib.import_module(f"impls.mutants.{name}")
    path = MUTANTS_DIR / f"{name}.py"
    code, out, report = run_suite("--impl", str(path), "--claim", module.CAUGHT_BY, report=tmp_path / "r.json")
    status = report["claims"].get(module.CAUGHT_BY, {}).get(name) if report else None
    assert status == "failed", (f"{name} ({module.BUG}) should fail {module.CAUGHT_BY}, but its status is {status}\n"
                                + out[-3000:])


def test_the_correct_base_passes_every_claim(tmp_path):
    code, out, report = run_suite("--impl", str(MUTANTS_DIR / "_base.py"), report=tmp_path / "r.json")
    assert code == 0, out[-5000:]
    bad = {c: s for c, per in report["claims"].items() for s in per.values() if s not in ("passed", "not applicable")}
    assert not bad, bad
