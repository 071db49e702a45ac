"""Declared scope: an implementation (a library's adapter, most often) saying that an input lies outside
what it can express. One concept: the exception it raises, and what the harness makes of it.

    from spec_tests import OutOfScope

    def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
        if query is not key:
            raise OutOfScope("the library's module is self-attention only")
        ...

A contract function may raise `OutOfScope(reason)` for any input. That input is then not judged:

* in a Hypothesis test, the example is rejected (as `hypothesis.assume(False)` would), counted as out of
  scope with its reason, and the test goes on drawing; the other examples are judged as usual;
* a test whose every example was out of scope is reported *out of scope*, with the reason: neither a
  failure nor Hypothesis's "Unsatisfiable";
* a test without Hypothesis is reported *out of scope* at once;
* a claim whose every test is out of scope (or not applicable) is out of scope for that implementation:
  not applicable to it, shown apart in the summary, the JSON report and the conformance matrix.

Out of scope earns no points when grading (grader/score.py counts only passes and "not applicable"): a
declaration is for telling what a library cannot express, not for a learner to dodge a claim.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, field

OUT_OF_SCOPE = "out of scope"  # the start of a skip reason, and the outcome the report records

# A test that has drawn this many examples, every one out of scope, stops there as out of scope: drawing Hypothesis's whole budget of rejections would cost seconds per test.
GIVE_UP_AFTER = 40


class OutOfScope(Exception):
    """Raised by an implementation for an input it cannot express: `OutOfScope("self-attention only")`.

    The reason is shown to the reader of the summary; say what the library lacks, not what the test wanted."""

    def __init__(self, reason: str = ""):
        super().__init__(reason)
        self.reason = reason or "the implementation declares this input out of its scope"


class AllOutOfScope(BaseException):
    """Every example a test drew so far was out of scope: the test stops and is reported out of scope.

    A BaseException, as NotImplementedYet is, so that Hypothesis stops at once instead of shrinking."""


@dataclass
class Tally:
    """One test's count of examples: out of scope (by reason), and judged (an example none of whose calls
    was out of scope)."""

    out: Counter = field(default_factory=Counter)
    judged: int = 0
    rejected: int = 0  # examples rejected
    example: object = None  # the example being drawn now (Hypothesis's build context of it)
    example_rejected: bool = False

    def reasons(self) -> str:
        return "; ".join(f"{reason} ({n} examples)" if n > 1 else reason for reason, n in self.out.most_common())

    def now(self, example) -> None:
        """A call in `example`: when it is a new one, the last one is done (judged, unless rejected)."""
        if example is not self.example:
            if self.example is not None and not self.example_rejected:
                self.judged += 1
            self.example, self.example_rejected = example, False


_TALLIES: dict[str, Tally] = {}


def _example():
    """The example Hypothesis is running now (its build context), or None outside Hypothesis."""
    from hypothesis import currently_in_test_context

    if not currently_in_test_context():
        return None
    from hypothesis.control import current_build_context  # no underscore, but not in Hypothesis's API docs

    return current_build_context()


def tally(nodeid: str) -> Tally | None:
    """What the test `nodeid` counted, if anything of it was out of scope."""
    return _TALLIES.get(nodeid)


def forget(nodeid: str) -> None:
    _TALLIES.pop(nodeid, None)


def judged(nodeid: str) -> None:
    """A call of the test returned (counted only once the test has had an input out of scope)."""
    t = _TALLIES.get(nodeid)
    if t is not None:
        t.now(_example())


_UNRECORDED = ContextVar("unrecorded", default=False)


@contextlib.contextmanager
def unrecorded():
    """Calls the harness makes for itself (carried.py's fixed inputs): an OutOfScope raised inside reaches the
    caller as it is, and neither rejects the test's example nor counts in its tally."""
    token = _UNRECORDED.set(True)
    try:
        yield
    finally:
        _UNRECORDED.reset(token)


def recording_off() -> bool:
    """Inside unrecorded(): a call the harness makes for itself."""
    return _UNRECORDED.get()


def declared(nodeid: str, exc: OutOfScope):
    """The implementation raised OutOfScope in test `nodeid`: reject the example, or end the test."""
    import pytest
    from hypothesis import reject

    if _UNRECORDED.get():
        raise exc
    t = _TALLIES.setdefault(nodeid, Tally())
    t.out[exc.reason] += 1
    example = _example()
    if example is None:
        pytest.skip(f"{OUT_OF_SCOPE}: {exc.reason}")
    t.now(example)
    if not t.example_rejected:
        t.example_rejected = True
        t.rejected += 1
    if t.judged == 0 and t.rejected >= GIVE_UP_AFTER:
        raise AllOutOfScope(t.reasons())
    reject()


def is_rejection(exc: BaseException) -> bool:
    """The exception that rejects an out-of-scope example (it must pass through checks that catch Exception)."""
    from hypothesis.errors import UnsatisfiedAssumption

    return isinstance(exc, (UnsatisfiedAssumption, OutOfScope))


def all_out_of_scope(nodeid: str, found: list[BaseException]) -> str | None:
    """The reason to report when test `nodeid` ended with nothing judged because its inputs were out of
    scope (AllOutOfScope, or Hypothesis's Unsatisfiable or filter health check); else None."""
    from hypothesis.errors import FailedHealthCheck, Unsatisfiable

    t = _TALLIES.get(nodeid)
    if t is None or not t.out or not found:
        return None
    if all(isinstance(e, AllOutOfScope) for e in found):
        return t.reasons()
    if all(isinstance(e, (Unsatisfiable, FailedHealthCheck)) for e in found):  # no example was valid
        return t.reasons()
    return None


def note(nodeid: str) -> str:
    """For a test that passed: how many of its examples were out of scope, and why ("" when none were)."""
    t = _TALLIES.get(nodeid)
    if t is None or not t.out:
        return ""
    n = sum(t.out.values())
    return f"{n} example{'s' if n > 1 else ''} {OUT_OF_SCOPE}: {t.reasons()}"
