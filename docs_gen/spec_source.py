"""What the specification says about itself, read statically: chapters, claims, tests, known bugs.

Nothing is imported from the test modules or the mutants: their files are parsed with `ast`,
so that a chapter being written (or a mutant that needs a missing package) cannot break the docs.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from docs_gen import ROOT

SPEC_DIR = ROOT / "spec_tests"
MUTANTS_DIR = ROOT / "impls" / "mutants"


@dataclass(frozen=True)
class Chapter:
    id: str
    title: str
    page: str  # docs page, e.g. "sdpa.md"
    module: str  # test module, e.g. "test_sdpa.py"

    @property
    def path(self) -> Path:
        return SPEC_DIR / self.module

    @property
    def source_page(self) -> str:
        """The generated page showing this chapter's tests, relative to docs/."""
        return f"source/{Path(self.module).stem}.md"


@dataclass(frozen=True)
class Claim:
    id: str
    chapter: str
    summary: str
    statement: str
    source: str

    @property
    def anchor(self) -> str:
        return self.id.lower()  # the anchor spec_tests/harness/claims.py links failures to


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


@dataclass
class Mutant:
    name: str
    bug: str
    caught_by: str
    doc: str
    path: Path
    spans: list[tuple[str, int, int]] = field(default_factory=list)  # (function, first line, last line) with a BUG


def load_catalogue() -> tuple[dict[str, Chapter], dict[str, Claim]]:
    with open(SPEC_DIR / "claims.toml", "rb") as f:
        data = tomllib.load(f)
    chapters = {c["id"]: Chapter(c["id"], c["title"], c["page"], c["module"]) for c in data["chapter"]}
    claims = {
        c["id"]: Claim(c["id"], c["chapter"], c["summary"], c.get("statement", c["summary"]), c.get("source", ""))
        for c in data["claim"]
    }
    return chapters, claims


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


def read_mutants() -> list[Mutant]:
    """The known-bug catalogue (impls/mutants/*.py): BUG, CAUGHT_BY, docstring, and the buggy code's lines."""
    found = []
    for path in sorted(MUTANTS_DIR.glob("*.py")):
        if path.stem.startswith("_"):
            continue
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        values = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if node.targets[0].id in ("BUG", "CAUGHT_BY"):
                    values[node.targets[0].id] = ast.literal_eval(node.value)
        if "BUG" not in values or "CAUGHT_BY" not in values:
            continue
        lines = text.splitlines()
        spans = []
        for node in tree.body:  # the functions the mutant replaces: those whose lines say BUG
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                if any("BUG" in line for line in lines[start - 1: node.end_lineno]):
                    spans.append((node.name, start, node.end_lineno))
        if not spans:  # no line says BUG: show every function the mutant defines
            spans = [(n.name, min([n.lineno] + [d.lineno for d in n.decorator_list]), n.end_lineno)
                     for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        found.append(Mutant(path.stem, " ".join(str(values["BUG"]).split()), str(values["CAUGHT_BY"]),
                            ast.get_docstring(tree) or "", path, spans))
    return found


def rel(path: Path) -> str:
    """A path as the snippets extension wants it: relative to the repository root, with slashes."""
    return path.resolve().relative_to(ROOT).as_posix()
