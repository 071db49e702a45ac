"""`--isolate`: run the implementation in a separate, confined worker process (always on when grading).

The suite's side of it. The implementation is never imported here: a worker process
(`spec_tests/sandbox/worker.py`) imports it, under limits, in a scratch working directory and,
when the suite runs as root, as an unprivileged user with the suite read-only and no network.
This process sends it inputs, reads back outputs (JSON and raw array bytes only, never a
pickle: `wire.py`), and does all the comparing, so the worker never holds an expected value.

    trusted (pytest, reference, checks)  --inputs-->  worker (the implementation)
                                         <--outputs--

One concern per module:

    limits.py     what the worker may use (the rubric's limits), the container's CPUs and memory,
                  and this machine's speed (the per-call limit is CPU time, calibrated)
    identity.py   an unprivileged user id per worker (root only), locked against other suites
    processes.py  the subreaper, finding and killing what a worker leaves behind, CPU time
    session.py    one worker: start, a request under its limits, restart, stop
    remote.py     an array that stays in the worker, held here by its handle
    guard.py      (in the worker) the watch on banned functions and PyTorch operators
    this module   what the plugin uses: load(), the Subject whose calls go over the wire
"""

from __future__ import annotations

import atexit

import numpy as np
import pytest

from spec_tests.harness import arrays, feedback, scope
from spec_tests.harness.context import current
from spec_tests.sandbox.identity import UID_RANGE  # noqa: F401 (re-exported: tests and tools use it)
from spec_tests.sandbox.limits import Limits  # noqa: F401 (re-exported)
from spec_tests.sandbox.remote import RemoteArray
from spec_tests.harness.loader import Implementation
from spec_tests.sandbox.session import (  # noqa: F401 (re-exported)
    SCRATCH_PREFIX,
    IsolationFailure,
    LoadError,
    Session,
    SubmissionError,
    forget,
    shutdown,
    summary,
)
from spec_tests.harness.subject import Call, NotImplementedYet, Subject, autocast_state, remember

atexit.register(shutdown)


def _describe_call(fname: str, args, kwargs) -> str:
    parts = [feedback.describe(a) for a in args] + [f"{k}={feedback.describe(v)}" for k, v in kwargs.items()]
    return f"{fname}({', '.join(parts)})"


# -- what the plugin uses ------------------------------------------------------------------
def load(spec: str, limits: Limits) -> Implementation:
    """Like loader.load, but the module is imported only in a worker; the suite gets its declarations."""
    session = Session(spec, limits)
    try:
        d = session.start()
    except BaseException:
        session.close()
        forget(session)
        raise
    impl = Implementation(name=str(d["name"]), spec=spec, module=None, backend=str(d["backend"]),
                          device=str(d["device"]), dtypes=tuple(str(x) for x in d["dtypes"]),
                          unavailable=d.get("unavailable"), path=session.path, notes=list(d.get("notes") or []),
                          contract=tuple(d["contract"]) if d.get("contract") else None, flash=bool(d.get("flash")))
    impl.remote = session
    return impl


def _contains(value, leaf) -> bool:
    """Does `value` (arrays, tuples, lists, dicts) hold a leaf for which leaf(x) is true?"""
    if isinstance(value, (tuple, list)):
        return any(_contains(v, leaf) for v in value)
    if isinstance(value, dict):
        return any(_contains(v, leaf) for v in value.values())
    return leaf(value)


def _has_remote(value) -> bool:
    return _contains(value, lambda x: isinstance(x, RemoteArray))


def _has_arrays(value) -> bool:
    return _contains(value, lambda x: isinstance(x, np.ndarray) or arrays.is_native(x))


def _handles(value):
    if isinstance(value, RemoteArray):
        return value._handle
    if isinstance(value, (tuple, list)):
        return type(value)(_handles(v) for v in value)
    if isinstance(value, dict):
        return {k: _handles(v) for k, v in value.items()}
    return value


class IsolatedSubject(Subject):
    """A Subject whose implementation runs in a worker: same interface, calls go over the wire."""

    def __init__(self, impl: Implementation, dtype: str):
        super().__init__(impl, dtype)
        self.session: Session = impl.remote

    def _keywords_of(self, fname):
        functions = self.session.description["functions"]
        return fname in functions, functions.get(fname)

    def has(self, fname: str, *keywords: str) -> bool:
        present, accepted = self._keywords_of(fname)
        return present and (accepted is None or all(k in accepted for k in keywords))

    def function(self, fname: str, *keywords: str):
        present, accepted = self._keywords_of(fname)
        self.require(fname, keywords, present, accepted)
        return lambda *args, **kwargs: self.call_native(fname, *args, **kwargs)

    def _request(self, body: dict, what: str):
        self.session.subject = self
        try:
            return self.session.request(self, body, what)
        except NotImplementedError as exc:
            raise NotImplementedYet(str(exc) or "raises NotImplementedError") from None

    def _call_remote(self, fname: str, body: dict, what: str, kwargs: dict, plain: bool):
        """A call of `fname` in the worker, decided as in-process (Subject._invoke): OutOfScope rejects the
        example; NotImplementedError makes the function unwritten only for the plain case."""
        nodeid = current().nodeid
        self.session.subject = self
        try:
            reply = self.session.request(self, body, what)
        except scope.OutOfScope as exc:
            scope.declared(nodeid, exc)
        except NotImplementedError as exc:
            raise self.unimplemented(fname, exc, kwargs, plain) from None
        scope.judged(nodeid)
        return reply

    def native(self, x):
        if not _has_arrays(x):
            return x
        return self._request({"op": "native", "dtype": self.dtype, "value": x}, "converting the inputs")

    def to_numpy(self, y):
        if not _has_remote(y):
            return super().to_numpy(y)
        return self._request({"op": "get", "value": _handles(y)}, "reading an array back")

    def call_native(self, fname: str, *args, **kwargs):
        self.function(fname, *kwargs)
        call = self._record(Call(self, fname, (), {}, native=True, autocast=autocast_state()))
        try:
            reply = self._call_remote(fname, {"op": "call_native", "fname": fname, "args": _handles(args),
                                              "kwargs": _handles(kwargs), "autocast": call.autocast}, f"{fname}(...)",
                                      kwargs, plain=False)
        except Exception as exc:
            self._raised(call, exc)
            raise
        (call.args, call.kwargs), call.after = reply["before"], reply["after"]
        call.result, call.seen_dtype = reply["values"], reply.get("dtype")
        return reply["result"]

    def bench(self, fname: str, *args, repeats: int = 1, **kwargs):
        """fname(*args, **kwargs) on arrays already in the worker (from native()), `repeats` times, converting
        nothing; returns the last result, still in the worker. grader/leaderboard.py times it from here."""
        self.function(fname, *kwargs)
        reply = self._request({"op": "bench", "fname": fname, "args": _handles(args), "kwargs": _handles(kwargs),
                               "repeats": int(repeats)}, f"{fname}(...) x {int(repeats)}")
        return reply["result"]

    def call(self, fname: str, *args, **kwargs):
        call = self._record(Call(self, fname, args, kwargs))
        self.function(fname, *kwargs)
        try:
            reply = self._call_remote(fname, {"op": "call", "fname": fname, "dtype": self.dtype, "args": args,
                                              "kwargs": kwargs}, _describe_call(fname, args, kwargs), kwargs, plain=True)
        except Exception as exc:
            self._raised(call, exc)
            raise
        call.seen_dtype = reply.get("dtype")
        out = reply["result"]
        call.result = out
        remember(out, call)
        return out

