"""The shape of the product's code: no import cycle, no private name imported across modules, no long
function, a thin plugin, and the suite's own tests outside the packages that ship.

"Product" is what ships (reference/, impls/, spec_tests/, grader/, adapters/) and the docs generator; these
tests are left out. Imports are read from the source with `ast`, module level and inside functions alike.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("reference", "impls", "spec_tests", "grader", "adapters", "docs_gen")
LONGEST_FUNCTION = 80  # lines, decorators and docstring included
PLUGIN_LINES = 300


def _modules() -> dict[str, Path]:
    found = {}
    for package in PRODUCT:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "__pycache__" in path.parts or "node_modules" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(module: str) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) for every import in a module of the product."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, node)
            for a in node.names:
                if f"{source}.{a.name}" in MODULES:
                    out.append((f"{source}.{a.name}", None, node.lineno))  # a submodule, not a name
                else:
                    out.append((source, a.name, node.lineno))
    return out


def _graph() -> dict[str, set[str]]:
    return {m: {target for target, _, _ in _imports(m) if target in MODULES and target != m} for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    # A package's __init__ importing its own submodule is not a cycle of concepts: leave those edges out.
    graph = {m: {t for t in ts if not m.startswith(t + ".") and not t.startswith(m + ".")} for m, ts in _graph().items()}
    assert _cycles(graph) == []


def test_no_private_name_is_imported_from_another_module():
    """A name starting with one underscore is its module's own; another module that needs it needs it public.

    A mutant starts from impls/mutants/_base.py and replaces its helpers by name: that is what the
    catalogue's base is for, so the mutants are left out of this rule."""
    private = []
    for module in MODULES:
        if module.startswith("impls.mutants"):
            continue
        for source, name, line in _imports(module):
            if source in MODULES and name and name.startswith("_") and not name.startswith("__"):
                private.append(f"{module}:{line} imports {name} from {source}")
    assert private == []


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield node.name, start, node.end_lineno - start + 1


def test_no_function_is_longer_than_80_lines():
    long = []
    for module, path in MODULES.items():
        for name, start, length in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            if length > LONGEST_FUNCTION:
                long.append(f"{module}.{name} (line {start}): {length} lines")
    assert long == []


def test_the_plugin_module_is_thin():
    lines = len((ROOT / "spec_tests" / "plugin.py").read_text(encoding="utf-8").splitlines())
    assert lines <= PLUGIN_LINES, f"spec_tests/plugin.py has {lines} lines: move a job into a module of its own"


@pytest.mark.parametrize("package", PRODUCT)
def test_the_suites_own_tests_are_not_in_a_package_that_ships(package):
    stray = [str(p.relative_to(ROOT)) for p in (ROOT / package).rglob("*")
             if p.is_dir() and p.name in ("meta", "demonstrations", "hostile", "tests")]
    assert stray == [], "the suite's own tests belong in tests/"


def test_one_claim_type():
    """The catalogue's Claim is the only one: docs, grader and suite read claims through it."""
    defined = []
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name == "Claim":
                defined.append(str(path.relative_to(ROOT)))
    assert defined == ["spec_tests/harness/claims.py"]
