"""Where the suite's own top-level packages are, and a finder that imports them from there only.

In the repository, reference/, impls/, grader/ and adapters/ sit beside spec_tests/. The wheel
installs a single top-level package, spec_tests, with the other four inside it, in
spec_tests/bundled/ (pyproject.toml), so that no other package of those names is overwritten. The
code imports them by their usual names (`from reference import ...`) in both cases: the finder
below, first on `sys.meta_path` from the moment spec_tests is imported, resolves these names to
those folders and nowhere else.

It also keeps a learner's files from standing in for the suite's. `python -m spec_tests check
mine.py`, run from a learner's folder, puts that folder first on sys.path, and a `reference.py` or
a `grader/` of theirs there would be imported in place of the suite's (its float64 reference, its
grader). Every other name is found as usual, so a learner's own helper modules next to their file
still import.
"""

from __future__ import annotations

import importlib.machinery
import sys
from pathlib import Path

SPEC_TESTS = Path(__file__).resolve().parents[1]  # spec_tests/
SUITE_ROOT = SPEC_TESTS.parent  # the repository root, or site-packages
BUNDLE = SPEC_TESTS / "bundled"  # the installed wheel's reference/, impls/, grader/, adapters/
NAMES = ("reference", "impls", "spec_tests", "grader", "adapters")


def home(name: str) -> Path:
    """The folder that holds the suite's package `name` (one of NAMES)."""
    if name == "spec_tests":
        return SUITE_ROOT
    return BUNDLE if (BUNDLE / name).is_dir() else SUITE_ROOT


def location(name: str) -> Path:
    """The suite's package `name` itself: e.g. location("impls") / "template.py"."""
    return home(name) / name


class OwnPackages:
    """A meta path finder for the suite's top-level package names: each looked up in its home only."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in NAMES:
            return None
        return importlib.machinery.PathFinder.find_spec(name, [str(home(name))])  # None: the usual search goes on


def install() -> None:
    """Put the finder first on sys.meta_path (once per process)."""
    if not any(type(f).__name__ == "OwnPackages" for f in sys.meta_path):
        sys.meta_path.insert(0, OwnPackages())
