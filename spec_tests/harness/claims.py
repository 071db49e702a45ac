"""The claim catalogue (spec_tests/claims.toml): chapters, claims, and what a run needs to know of them.

This module is the only reader of claims.toml. Everything the suite, the grader and the docs
generator know about a chapter (its title, page, test module, where it runs in a pytest run) or a
claim (its statement, its source, how many examples its tests draw) comes from here. Adding a
chapter is a test module and its entries in claims.toml, nothing else.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SPEC_DIR = Path(__file__).resolve().parents[1]
CATALOGUE = SPEC_DIR / "claims.toml"


@dataclass(frozen=True)
class Chapter:
    id: str
    title: str
    page: str  # its docs page, e.g. "sdpa.md"
    module: str  # its test module, e.g. "test_sdpa.py"
    # Where its tests run in a pytest run: cheap, foundational chapters first, so that `pytest -x` shows
    # the first failure soon. Chapters without one run last, in catalogue order.
    order: int | None = None

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
    # A demonstration: shown on the reference's own algorithms (tests/demonstrations/), never
    # claimed of an implementation: no test of a chapter module, no matrix cell, no points.
    demonstration: bool = False
    # Examples its Hypothesis tests draw in the dev, ci and grading profiles (None: the profile's
    # own count), chosen by the kill-rate study (docs_gen/kill_rate.py; docs/conventions.md).
    examples: int | None = None
    # The boundary inputs (harness/boundaries.py) each of its Hypothesis tests tries first, on every run.
    boundaries: tuple[str, ...] = ()

    @property
    def anchor(self) -> str:
        return self.id.lower()

    @property
    def doc(self) -> str:
        return f"docs/{chapters()[self.chapter].page}#{self.anchor}"


@cache
def _load() -> dict:
    with open(CATALOGUE, "rb") as f:
        return tomllib.load(f)


@cache
def chapters() -> dict[str, Chapter]:
    return {c["id"]: Chapter(c["id"], c["title"], c["page"], c["module"], c.get("order")) for c in _load()["chapter"]}


@cache
def catalogue() -> dict[str, Claim]:
    return {
        c["id"]: Claim(c["id"], c["chapter"], c["summary"], c.get("statement", c["summary"]), c.get("source", ""),
                       bool(c.get("demonstration", False)), c.get("examples"), tuple(c.get("boundaries", ())))
        for c in _load()["claim"]
    }


def get(claim_id: str) -> Claim:
    try:
        return catalogue()[claim_id]
    except KeyError:
        raise KeyError(f"unknown claim ID {claim_id!r}: add it to {CATALOGUE}") from None


@cache
def _ranks() -> dict[str, int]:
    listed = list(chapters().values())
    ordered = sorted(listed, key=lambda c: (c.order is None, c.order or 0, listed.index(c)))
    return {Path(c.module).stem: rank for rank, c in enumerate(ordered)}


def chapter_rank(module_stem: str) -> int:
    """Where a test module's tests run (`test_sdpa` first); a module that is no chapter runs after them all."""
    return _ranks().get(module_stem, len(_ranks()))


def examples(claim_ids) -> int | None:
    """The example count of a test of these claims: the largest of their counts (None: none has one)."""
    counts = [catalogue()[c].examples for c in claim_ids if c in catalogue() and catalogue()[c].examples]
    return max(counts) if counts else None


def boundaries(claim_ids) -> tuple[str, ...]:
    """The boundaries a test of these claims tries: every one any of them declares, in declaration order."""
    names = [b for c in claim_ids if c in catalogue() for b in catalogue()[c].boundaries]
    return tuple(dict.fromkeys(names))
