"""Every claim of a written chapter has a test; every spec test carries a claim of its own chapter."""

import ast
from pathlib import Path

import pytest

from spec_tests.harness import claims

SPEC_DIR = Path(__file__).resolve().parents[1] / "spec_tests"
# Claims of written chapters whose tests land with a later chapter (the later-chapters work).
PENDING: set[str] = set()


def _spec_tests():
    """(module, test name, claim IDs) for every test function in spec_tests/test_*.py, read statically."""
    found = []
    for path in sorted(SPEC_DIR.glob("test_*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                ids = []
                for dec in node.decorator_list:
                    if isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == "claim":
                        ids += [a.value for a in dec.args if isinstance(a, ast.Constant)]
                    if isinstance(dec, ast.Call) and getattr(dec.func, "attr", None) == "claim":
                        ids += [a.value for a in dec.args if isinstance(a, ast.Constant)]
                found.append((path.name, node.name, ids))
    return found


def test_every_spec_test_has_a_known_claim():
    unknown = [(m, t, ids) for m, t, ids in _spec_tests() if not ids or any(i not in claims.catalogue() for i in ids)]
    assert not unknown, f"spec tests without a claim marker, or with an unknown claim ID: {unknown}"


def test_every_test_sits_in_its_claims_chapter():
    modules = {c.id: c.module for c in claims.chapters().values()}
    wrong = [(m, t, i) for m, t, ids in _spec_tests() for i in ids if modules[claims.get(i).chapter] != m]
    assert not wrong, f"tests whose claim belongs to another chapter's module: {wrong}"


@pytest.mark.parametrize("chapter", sorted(claims.chapters()))
def test_every_claim_of_a_written_chapter_has_a_test(chapter):
    module = claims.chapters()[chapter].module
    if not (SPEC_DIR / module).exists():
        pytest.skip(f"chapter {chapter} ({module}) is not written yet")
    tested = {i for m, _, ids in _spec_tests() if m == module for i in ids}
    wanted = {c.id for c in claims.catalogue().values() if c.chapter == chapter and not c.demonstration}
    missing = sorted(wanted - tested - PENDING)
    assert not missing, f"claims of {module} with no test: {missing}"


def test_every_demonstration_claim_is_demonstrated():
    """A claim marked `demonstration = true` in claims.toml has a test in tests/demonstrations/."""
    shown = set()
    for path in sorted((SPEC_DIR.parent / "tests" / "demonstrations").glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef):
                for dec in node.decorator_list:
                    if isinstance(dec, ast.Call) and getattr(dec.func, "id", None) == "demonstration":
                        shown |= {a.value for a in dec.args if isinstance(a, ast.Constant)}
    unknown = shown - set(claims.catalogue())
    missing = {c.id for c in claims.catalogue().values() if c.demonstration} - shown
    assert not unknown and not missing, f"unknown claim IDs {unknown}; demonstration claims not shown {missing}"


def test_every_chapter_of_the_spec_core_is_written():
    core = ["sdpa", "multi_head", "masks", "variable_length", "layer_norm", "positional", "errors"]
    missing = [c for c in core if not (SPEC_DIR / claims.chapters()[c].module).exists()]
    assert not missing, f"spec-core chapters without a test module: {missing}"


def test_claim_ids_are_unique_and_statements_short():
    ids = [c["id"] for c in claims._load()["claim"]]
    assert len(ids) == len(set(ids))
    long = [c.id for c in claims.catalogue().values() if len(c.summary) > 72]
    assert not long, f"summaries longer than 72 characters: {long}"
