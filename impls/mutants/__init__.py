"""Deliberately buggy implementations ("mutants", known bugs) of the v1 contract, and their one reader.

`_base.py` is a correct, plain NumPy implementation of the whole contract.
Every other module here starts from it and plants exactly one bug of the kind
learners really write (a missing transpose, a wrong softmax axis, a -1e9 mask
fill, ...).  Each mutant is a complete contract module and carries plain
attributes: `BUG`, the bug in words, `CAUGHT_BY`, the claim ID (spec_tests/claims.toml)
whose tests should fail on it, and optionally `ALSO_CAUGHT_BY`, a tuple of further claims
it fails, and `SAME_BUG_AS`, the name of a known bug that is this one in another backend or dtype (the
diagnosis names one bug where the two explain a failure alike).  The suite's own tests use them to show that every claim has teeth: the base
passes, each mutant fails its claims.

This module is the only reader of that catalogue:

    catalogue()          every known bug, by name: [KnownBug, ...]
    read(name)           one of them
    names()              their names (file stems, `_base` left out)

Each takes an optional `folder` (another checkout's impls/mutants/, say). The files are parsed
with `ast`, never imported: a few mutants import torch, and reading the catalogue must not need it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

FOLDER = Path(__file__).resolve().parent


@dataclass(frozen=True)
class KnownBug:
    name: str  # the file's stem, e.g. "no_score_scaling"
    bug: str  # BUG, its whitespace collapsed ("" when the file has none)
    caught_by: str  # CAUGHT_BY ("" when the file has none)
    also_caught_by: tuple[str, ...]  # ALSO_CAUGHT_BY, () when absent
    doc: str  # the module docstring ("" when none)
    path: Path
    # (function, first line, last line) of the functions the bug lives in: those whose lines say BUG
    # (decorators included), or every function the file defines when no line does.
    spans: tuple[tuple[str, int, int], ...] = ()
    # Every module attribute whose value is a literal (BUG, CAUGHT_BY, DTYPES, BACKEND, ...), as written.
    attributes: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def claims(self) -> list[str]:
        """The claims it is recorded to fail: CAUGHT_BY, then ALSO_CAUGHT_BY."""
        return list(dict.fromkeys(c for c in (self.caught_by, *self.also_caught_by) if c))


def names(folder: Path = FOLDER) -> list[str]:
    return sorted(p.stem for p in Path(folder).glob("*.py") if not p.stem.startswith("_"))


def read(name: str, folder: Path = FOLDER) -> KnownBug:
    path = Path(folder) / f"{name}.py"
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    values = _literals(tree)
    also = values.get("ALSO_CAUGHT_BY", ())
    return KnownBug(name, " ".join(str(values.get("BUG", "")).split()), str(values.get("CAUGHT_BY", "")),
                    tuple(also) if isinstance(also, (tuple, list)) else (str(also),),
                    ast.get_docstring(tree) or "", path, _spans(tree, text.splitlines()), values)


def catalogue(folder: Path = FOLDER) -> list[KnownBug]:
    return [read(n, folder) for n in names(folder)]


def _literals(tree: ast.Module) -> dict:
    values = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                values[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return values


def _spans(tree: ast.Module, lines: list[str]) -> tuple[tuple[str, int, int], ...]:
    functions = [(n.name, min([n.lineno] + [d.lineno for d in n.decorator_list]), n.end_lineno)
                 for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    marked = [f for f in functions if any("BUG" in line for line in lines[f[1] - 1:f[2]])]
    return tuple(marked or functions)
