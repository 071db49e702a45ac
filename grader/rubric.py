"""The rubric: which claims are graded, for how many points, who sees them, and the limits.

    [grading]
    total = 100                       # the points of a perfect submission
    partial = true                    # a claim earns points x (its tests passed / its tests that apply)
    docs_url = ""                     # where "read: docs/..." links point (empty: the repository's docs/)
    total_timeout = 540               # seconds for one submission's whole run (Gradescope stops at 600 s)
    required_dtypes = ["float64", "float32"]  # a submission must declare these in DTYPES
    exclude_tests = ["test_masks.py::test_grouped_query_decoding_reproduces_causal_self_attention"]

    [limits]                          # harness/limits.py's Limits: call_timeout, test_timeout, memory_mb, ...
    call_timeout = 10                 # CPU seconds of one call, scaled by this machine's measured speed

    [leaderboard]                     # optional: Gradescope leaderboard entries (grader/leaderboard.py)
    size = [1, 8, 512, 64]            # B, H, L, d of the timed SDPA call; also dtype, causal, baseline

    [banned]
    functions = ["torch.nn.functional.scaled_dot_product_attention", "reference"]  # implies their operators
    ops = ["aten::_scaled_dot_product_*"]  # PyTorch operators (schema names, fnmatch), caught at the dispatcher

    [chapters.sdpa]                   # every claim of the chapter that has tests shares the points
    points = 20
    visibility = "visible"            # Gradescope: visible, hidden, after_due_date, after_published
    exclude = ["SDPA-8"]

    [claims."MASK-4"]                 # a claim of its own: taken out of its chapter's share
    points = 5
    visibility = "hidden"

Points are shown as the rubric states them, never rescaled: a chapter worth 20 is out of 20 in
every report. A claim whose tests are all "not applicable" to a submission (a float16-only claim
for a float64 implementation) is shown as "not applicable" and earns its points: there is nothing
in it the submission could get wrong. `total`, when given, must equal the sum of the points.

`required_dtypes` closes the way round that: a submission whose DTYPES leaves out a required dtype
fails, in every graded claim, as many tests as that claim has in a dtype it does declare, with a
message naming the missing dtype. Declaring fewer dtypes never raises a grade.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from grader import cache as cache_mod
from grader import leaderboard
from spec_tests.harness import claims as catalogue
from spec_tests.sandbox.isolation import Limits
from spec_tests.harness.loader import KNOWN_DTYPES

GRADER_DIR = Path(__file__).resolve().parent
SPEC_DIR = Path(catalogue.__file__).resolve().parents[1]  # spec_tests/: the chapters whose tests grade
DEFAULT = GRADER_DIR / "rubric.toml"
VISIBILITY = ("visible", "hidden", "after_due_date", "after_published")


class RubricError(ValueError):
    """The rubric file is not valid; the message says where."""


@dataclass(frozen=True)
class Item:
    claim: str
    chapter: str
    points: float
    visibility: str


@dataclass
class Rubric:
    path: str
    items: list[Item]
    total: float
    partial: bool
    docs_url: str
    limits: Limits
    total_timeout: float = 540.0
    exclude_tests: tuple[str, ...] = ()  # "module.py::test_name": not run, not graded
    required_dtypes: tuple[str, ...] = ()  # dtypes a submission must declare (DTYPES)
    notes: list[str] = field(default_factory=list)
    leaderboard: leaderboard.Settings | None = None  # the [leaderboard] table (grader/leaderboard.py), if any

    @property
    def claims(self) -> list[str]:
        return [i.claim for i in self.items]

    @property
    def modules(self) -> list[str]:
        """The chapter modules that hold the graded claims' tests."""
        tested = tested_claims(self.exclude_tests)
        return sorted({t.split("::")[0] for c in self.claims for t in tested.get(c, [])})

    def item(self, claim_id: str) -> Item:
        return next(i for i in self.items if i.claim == claim_id)


@cache
def tested_claims(exclude: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Claim ID -> the spec tests of an implementation that carry it, read from the chapter modules.

    Slow tests (left out of the default run) and tests without the `impl` fixture (checks of the
    oracle itself) grade nothing. Read once per version of the chapter modules (grader/cache.py).
    """
    modules = sorted(SPEC_DIR.glob("test_*.py"))
    pairs = cache_mod.cached("tested-claims", [*modules, Path(__file__)], SPEC_DIR.parent,
                             lambda: _claim_tests(modules))
    found: dict[str, list[str]] = {}
    for claim_id, test in pairs:
        if test not in exclude:
            found.setdefault(claim_id, []).append(test)
    return found


def _claim_tests(modules: list[Path]) -> list[tuple[str, str]]:
    """(claim ID, "test_module.py::test_name") for every claim decorator of every graded test."""
    found = []
    for path in modules:
        tree = ast.parse(path.read_text())
        if any(_is_slow(v) for n in tree.body if isinstance(n, ast.Assign)
               for t in n.targets if getattr(t, "id", "") == "pytestmark" for v in _listed(n.value)):
            continue
        for node in tree.body:
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            if any(_is_slow(d) for d in node.decorator_list) or "impl" not in [a.arg for a in node.args.args]:
                continue
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and _name(dec.func) in ("claim", "pytest.mark.claim"):
                    for arg in dec.args:
                        if isinstance(arg, ast.Constant):
                            found.append((arg.value, f"{path.name}::{node.name}"))
    return found


def _listed(node):
    return node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]


def _name(node) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return ""


def _is_slow(node) -> bool:
    return _name(node) in ("pytest.mark.slow", "slow")


def load(path: str | Path | None = None) -> Rubric:
    path = Path(path).resolve() if path else DEFAULT
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RubricError(f"cannot read the rubric {path}: {exc}") from None
    unknown = set(data) - {"grading", "limits", "banned", "chapters", "claims", "leaderboard"}
    if unknown:
        raise RubricError(f"{path}: unknown tables {sorted(unknown)}")
    try:
        limits = Limits.from_toml(str(path))
    except (ValueError, TypeError) as exc:
        raise RubricError(str(exc)) from None
    grading = data.get("grading", {})
    exclude = tuple(grading.get("exclude_tests", ()))
    all_claims, tested, chapters = catalogue.catalogue(), tested_claims(exclude), catalogue.chapters()
    every_test = {t for ts in tested_claims().values() for t in ts}
    stale = [t for t in exclude if t not in every_test]
    if stale:
        raise RubricError(f"{path}: exclude_tests names no test of an implementation: {stale}")
    notes: list[str] = []

    def visibility(table, where) -> str:
        v = table.get("visibility", "visible")
        if v not in VISIBILITY:
            raise RubricError(f"{path}: {where}: visibility must be one of {VISIBILITY}, got {v!r}")
        return v

    own: dict[str, Item] = {}
    for cid, table in data.get("claims", {}).items():
        if cid not in all_claims:
            raise RubricError(f"{path}: [claims.{cid!r}]: no such claim (see spec_tests/claims.toml)")
        if cid not in tested:
            raise RubricError(f"{path}: [claims.{cid!r}]: this claim has no test in the default run to grade it by")
        own[cid] = Item(cid, all_claims[cid].chapter, float(table.get("points", 1)), visibility(table, cid))
    items: list[Item] = []
    for chapter, table in data.get("chapters", {}).items():
        if chapter not in chapters:
            raise RubricError(f"{path}: [chapters.{chapter}]: no such chapter; chapters: {sorted(chapters)}")
        left_out = set(table.get("exclude", []))
        bad = left_out - set(all_claims)
        if bad:
            raise RubricError(f"{path}: [chapters.{chapter}] excludes unknown claims {sorted(bad)}")
        members = [c for c in all_claims.values() if c.chapter == chapter and c.id not in left_out | set(own)]
        untested = [c.id for c in members if c.id not in tested]
        if untested:
            notes.append(f"chapter {chapter}: {', '.join(untested)} not graded (no test in the default run)")
        members = [c for c in members if c.id in tested]
        if not members:
            continue
        share = float(table.get("points", 0)) / len(members)
        items += [Item(c.id, chapter, share, visibility(table, chapter)) for c in members]
    items += own.values()
    order = list(all_claims)
    items.sort(key=lambda i: order.index(i.claim))
    if not items:
        raise RubricError(f"{path}: grades no claim: add [chapters.NAME] or [claims.ID] tables")
    known = {"total", "partial", "docs_url", "total_timeout", "exclude_tests", "required_dtypes"}
    if set(grading) - known:
        raise RubricError(f"{path}: unknown [grading] keys {sorted(set(grading) - known)}; known: {sorted(known)}")
    points = sum(i.points for i in items)
    total = float(grading.get("total", points))
    if abs(total - points) > 1e-6 * max(1.0, total):
        raise RubricError(f"{path}: the points of the graded claims add up to {points:g}, but [grading] total is "
                          f"{total:g}; change the points or the total (points are never rescaled)")
    required = grading.get("required_dtypes", [])
    if not isinstance(required, list) or any(d not in KNOWN_DTYPES for d in required):
        raise RubricError(f"{path}: [grading] required_dtypes must be a list of {list(KNOWN_DTYPES)}, got {required!r}")
    board = data.get("leaderboard")
    if board is not None:
        try:
            board = leaderboard.Settings.from_table(board, str(path))
        except (ValueError, TypeError) as exc:
            raise RubricError(str(exc)) from None
    return Rubric(str(path), items, total, bool(grading.get("partial", True)), str(grading.get("docs_url", "")),
                  limits, float(grading.get("total_timeout", 540)), exclude, tuple(required), notes, board)
