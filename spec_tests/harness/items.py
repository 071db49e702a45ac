"""What a collected test is about: the implementation and dtype it checks (its subject), its claims,
its chapter; and the run's selection of tests by claim and chapter (--claim, --chapter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spec_tests.harness import claims as catalogue
from spec_tests.harness.subject import Subject


def subject_of(item) -> Subject | None:
    """The implementation and dtype a test checks (its `impl` parameter); None for a test without one."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("impl") if callspec else None


def claims_of(item) -> tuple[str, ...]:
    """The claim IDs of a test's `claim` markers, in order, once each."""
    ids = []
    for mark in item.iter_markers("claim"):
        ids.extend(mark.args)
    return tuple(dict.fromkeys(ids))


def chapter_rank(item) -> int:
    """`pytest -x` shows the first failure soon: chapters run in claims.toml's `order`."""
    return catalogue.chapter_rank(Path(str(item.path)).stem)


def wanted(config, name: str) -> set[str]:
    """The values of a repeatable, comma-separated option (--claim, --chapter)."""
    return {v.strip() for opt in config.getoption(name) for v in opt.split(",") if v.strip()}


def select(config, items) -> tuple[list, list]:
    """The tests --claim and --chapter keep, and those they leave out."""
    want_claims, want_chapters = wanted(config, "--claim"), wanted(config, "--chapter")
    unknown = sorted(c for c in want_claims if c not in catalogue.catalogue())
    if unknown:  # a usage error, not an empty run (`python -m spec_tests claims` lists them)
        raise pytest.UsageError(f"--claim: unknown claim ID(s) {', '.join(unknown)}; "
                                "`python -m spec_tests claims` lists every claim")
    keep, drop = [], []
    for item in items:
        ids = claims_of(item)
        if want_claims and not want_claims.intersection(ids):
            drop.append(item)
        elif want_chapters and not {catalogue.get(i).chapter for i in ids} & want_chapters:
            drop.append(item)
        else:
            keep.append(item)
    return keep, drop
