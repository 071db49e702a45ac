"""The claim catalogue (spec_tests/claims.toml): IDs, chapters, one-line statements."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

CATALOGUE = Path(__file__).resolve().parents[1] / "claims.toml"


@dataclass(frozen=True)
class Claim:
    id: str
    chapter: str
    summary: str
    statement: str
    source: str
    # A demonstration: shown on the reference's own algorithms (spec_tests/demonstrations/), never
    # claimed of an implementation: no test of a chapter module, no matrix cell, no points.
    demonstration: bool = False

    @property
    def anchor(self) -> str:
        return self.id.lower()

    @property
    def doc(self) -> str:
        return f"docs/{chapters()[self.chapter]['page']}#{self.anchor}"


@cache
def _load() -> dict:
    with open(CATALOGUE, "rb") as f:
        return tomllib.load(f)


@cache
def chapters() -> dict[str, dict]:
    return {c["id"]: c for c in _load()["chapter"]}


@cache
def catalogue() -> dict[str, Claim]:
    return {
        c["id"]: Claim(c["id"], c["chapter"], c["summary"], c.get("statement", c["summary"]), c.get("source", ""),
                       bool(c.get("demonstration", False)))
        for c in _load()["claim"]
    }


def get(claim_id: str) -> Claim:
    try:
        return catalogue()[claim_id]
    except KeyError:
        raise KeyError(f"unknown claim ID {claim_id!r}: add it to {CATALOGUE}") from None
