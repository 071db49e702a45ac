"""A pytest plugin for mutation runs only (`-p tests.mutation.quick`): the same verdicts, sooner.

Many mutants share one run (`--impl m0000.py,m0001.py,...`). Once one of a mutant's tests has failed, the
mutant is killed and its remaining tests are skipped; and Hypothesis does not shrink a failing example. Neither
changes which examples are drawn (the `ci` profile is derandomized) nor whether a mutant fails: shrinking
only starts after a failure was found, and a killed mutant stays killed.

A mutant can also hang (a loop condition turned so that it never ends): a test that runs over LIMIT_S fails, so
the mutant is killed, as a learner's hanging code fails the grader's time limit, and the other mutants of the
batch still run. The alarm repeats every second until the test ends, in case the suite's own code catches it.
"""

from __future__ import annotations

import re
import signal

import pytest
from hypothesis import Phase, settings

KILLED: set[str] = set()
TIMED_OUT: set[str] = set()
LIMIT_S = 60  # a test of a correct implementation takes a few seconds at most


class MutantHangs(Exception):
    """A test ran over LIMIT_S."""
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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    def expire(_signum, _frame):
        TIMED_OUT.add(item.nodeid)
        raise MutantHangs(f"the test ran over {LIMIT_S} s: the mutant hangs")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, LIMIT_S, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.hookimpl(hookwrapper=True, trylast=True)  # inside the suite's own wrapper, which records the outcome
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when == "call" and item.nodeid in TIMED_OUT and not report.failed:  # the suite caught the alarm
        report.outcome = "failed"
        report.longrepr = f"the test ran over {LIMIT_S} s: the mutant hangs"
