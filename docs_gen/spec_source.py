"""What the chapter modules say about themselves, read statically: their tests, claim markers and lines.

Nothing is imported from the test modules: their files are parsed with `ast`, so that a chapter being
written cannot break the docs. The chapters and claims come from the catalogue's own reader
(spec_tests/harness/claims.py), the known bugs from theirs (impls/mutants/__init__.py).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from docs_gen import ROOT
from impls import mutants
from impls.mutants import KnownBug
from spec_tests.harness.claims import Chapter


@dataclass
class SpecTest:
    module: str  # "test_sdpa.py"
    name: str  # "test_sdpa_matches_oracle", or "TestX::test_y" inside a class
    claims: list[str]
    doc: str  # first paragraph of the docstring, "" if none
    start: int  # first line, decorators included (1-based)
    end: int  # last line

    @property
    def anchor(self) -> str:
        return self.name.replace("::", "-").lower()


def _claim_ids(decorators: list[ast.expr]) -> list[str]:
    """IDs in `@claim("X-1", ...)` or `@pytest.mark.claim("X-1")` decorators."""
    ids = []
    for dec in decorators:
        if not isinstance(dec, ast.Call):
            continue
        f = dec.func
        if (isinstance(f, ast.Name) and f.id == "claim") or (isinstance(f, ast.Attribute) and f.attr == "claim"):
            ids += [a.value for a in dec.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return ids


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return " ".join(doc.strip().split("\n\n")[0].split())


def _test(module: str, name: str, node: ast.FunctionDef, inherited: list[str]) -> SpecTest:
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return SpecTest(module, name, list(dict.fromkeys(inherited + _claim_ids(node.decorator_list))),
                    _first_paragraph(ast.get_docstring(node)), start, node.end_lineno)


def read_tests(path: Path) -> list[SpecTest]:
    """Every test function of one chapter module, with its claim markers and its lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module_marks: list[str] = []
    for node in tree.body:  # pytestmark = pytest.mark.claim("X") applies to the whole module
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            module_marks += _claim_ids(values)
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            found.append(_test(path.name, node.name, node, module_marks))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            class_marks = module_marks + _claim_ids(node.decorator_list)
            for sub in node.body:
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name.startswith("test"):
                    found.append(_test(path.name, f"{node.name}::{sub.name}", sub, class_marks))
    return found


def module_doc(path: Path) -> str:
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def tests_by_claim(chapters: dict[str, Chapter]) -> dict[str, list[SpecTest]]:
    """claim ID -> the tests (in any chapter module) that carry it, in file order."""
    out: dict[str, list[SpecTest]] = {}
    for ch in chapters.values():
        if ch.path.exists():
            for t in read_tests(ch.path):
                for cid in t.claims:
                    out.setdefault(cid, []).append(t)
    return out


def rel(path: Path) -> str:
    """A path as the snippets extension wants it: relative to the repository root, with slashes."""
    return path.resolve().relative_to(ROOT).as_posix()


def known_bugs() -> list[KnownBug]:
    """The known bugs the docs show: those of the catalogue (impls/mutants/, read by its own reader)
    that say what their bug is and which claim catches it."""
    return [b for b in mutants.catalogue() if b.bug and b.caught_by]
