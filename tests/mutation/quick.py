"""A pytest plugin for mutation runs only (`-p tests.mutation.quick`): the same verdicts, sooner.

Many mutants share one run (`--impl m0000.py,m0001.py,...`). Once one of a mutant's tests has failed, the
mutant is killed and its remaining tests are skipped; and Hypothesis does not shrink a failing example. Neither
changes which examples are drawn (the `ci` profile is derandomized) nor whether a mutant fails: shrinking
only starts after a failure was found, and a killed mutant stays killed.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import Phase, settings

KILLED: set[str] = set()
_NAME = re.compile(r"\b(m\d{4})\b")


def mutant_of(nodeid: str) -> str | None:
    found = _NAME.search(nodeid.split("::")[-1])
    return found.group(1) if found else None


def pytest_configure(config):
    name = settings.get_current_profile_name()
    no_shrink = [p for p in settings.get_profile(name).phases if p is not Phase.shrink]
    settings.register_profile(name, parent=settings.get_profile(name), phases=no_shrink)
    settings.load_profile(name)


def pytest_runtest_setup(item):
    if mutant_of(item.nodeid) in KILLED:
        pytest.skip("this mutant already failed a test")


def pytest_runtest_logreport(report):
    if report.failed:
        name = mutant_of(report.nodeid)
        if name:
            KILLED.add(name)
