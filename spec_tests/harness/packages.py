"""The suite's own top-level packages are found in the suite's own folder, whatever else is on sys.path.

`python -m spec_tests check mine.py`, run from a learner's folder, puts that folder first on sys.path.
A `reference.py` or a `grader/` of the learner's there would then be imported in place of the suite's
(its float64 reference, its grader), and the run would judge against the wrong code. A finder first on
`sys.meta_path` resolves these five names to the folder that holds the suite (the repository root, or
site-packages for an installed wheel) and nowhere else; every other name is found as usual, so a
learner's own helper modules next to their file still import.
"""

from __future__ import annotations

import importlib.machinery
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the folder holding spec_tests/, reference/, impls/, ...
NAMES = ("reference", "impls", "spec_tests", "grader", "adapters")


class OwnPackages:
    """A meta path finder for the suite's top-level package names: looked up in ROOT only."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in NAMES:
            return None
        return importlib.machinery.PathFinder.find_spec(name, [str(ROOT)])  # None: the usual search goes on


def install() -> None:
    """Put the finder first on sys.meta_path (once per process)."""
    if not any(type(f).__name__ == "OwnPackages" for f in sys.meta_path):
        sys.meta_path.insert(0, OwnPackages())
