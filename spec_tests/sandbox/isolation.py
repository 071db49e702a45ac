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
    guard.py      (in the worker) the watch on banned functions and PyTorch operators
    this module   what the plugin uses: load(), the Subject whose calls go over the wire
"""

from __future__ import annotations

import atexit
import sys

import numpy as np
import pytest

from spec_tests.harness import arrays, feedback
from spec_tests.sandbox import wire
from spec_tests.sandbox.identity import UID_RANGE  # noqa: F401 (re-exported: tests and tools use it)
from spec_tests.sandbox.limits import Limits  # noqa: F401 (re-exported)
from spec_tests.harness.loader import Implementation
from spec_tests.sandbox.session import (  # noqa: F401 (re-exported)
    SCRATCH_PREFIX,
    IsolationFailure,
    LoadError,
    Session,
    SubmissionError,
    shutdown,
    summary,
)
from spec_tests.harness.subject import Call, NotImplementedYet, Subject, _remember, autocast_state

atexit.register(shutdown)


def _describe_call(fname: str, args, kwargs) -> str:
    parts = [feedback.describe(a) for a in args] + [f"{k}={feedback.describe(v)}" for k, v in kwargs.items()]
    return f"{fname}({', '.join(parts)})"


# -- what the plugin uses ------------------------------------------------------------------
def load(spec: str, limits: Limits) -> Implementation:
    """Like loader.load, but the module is imported only in a worker; the suite gets its declarations."""
    from spec_tests.sandbox.session import _SESSIONS

    session = Session(spec, limits)
    try:
        d = session.start()
    except BaseException:
        session.close()
        _SESSIONS.remove(session) if session in _SESSIONS else None
        raise
    impl = Implementation(name=str(d["name"]), spec=spec, module=None, backend=str(d["backend"]),
                          device=str(d["device"]), dtypes=tuple(str(x) for x in d["dtypes"]),
                          unavailable=d.get("unavailable"), path=session.path, notes=list(d.get("notes") or []),
                          contract=tuple(d["contract"]) if d.get("contract") else None, flash=bool(d.get("flash")))
    impl.remote = session
    return impl


class RemoteArray:
    """An array of the implementation's backend that stays in the worker (impl.native's result there)."""

    def __init__(self, session: Session, handle: wire.Handle):
        self._session, self._handle = session, handle

    @property
    def dtype(self):
        """torch's dtype object when the test has torch at hand (`y.dtype == torch.float32`), else its name."""
        torch = sys.modules.get("torch")
        if torch is not None and self._session.description.get("backend") == "torch":
            return getattr(torch, self._handle.dtype, self._handle.dtype)
        return self._handle.dtype

    shape = property(lambda self: self._handle.shape)
    ndim = property(lambda self: len(self._handle.shape))

    def _ask(self, body: dict, what: str):
        subject = getattr(self._session, "subject", None)
        return self._session.request(subject, dict(body, target=self._handle, autocast=autocast_state()), what)

    def requires_grad_(self, flag: bool = True):
        return self._ask({"op": "method", "name": "requires_grad_", "args": [bool(flag)]}, "requires_grad_()")

    def sum(self):
        return self._ask({"op": "method", "name": "sum", "args": []}, "sum()")

    def backward(self):
        return self._ask({"op": "method", "name": "backward", "args": []}, "backward()")

    def detach(self):
        return self._ask({"op": "method", "name": "detach", "args": []}, "detach()")

    def __getitem__(self, key):
        return self._ask({"op": "method", "name": "__getitem__", "args": [key]}, "indexing")

    @property
    def requires_grad(self) -> bool:
        return bool(self._ask({"op": "attr", "name": "requires_grad"}, ".requires_grad"))

    @property
    def grad(self):
        return self._ask({"op": "attr", "name": "grad"}, ".grad")

    def __repr__(self) -> str:
        return f"RemoteArray({self._handle.dtype}, shape={self._handle.shape})"


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

    def _request(self, body: dict, what: str, fname: str | None = None):
        self.session.subject = self
        try:
            return self.session.request(self, body, what)
        except NotImplementedError as exc:
            if fname is not None:
                text = str(exc)
                self._unimplemented[fname] = (text if fname in text else
                                              f"{fname}: {text or 'raises NotImplementedError'}")
                raise NotImplementedYet(self._unimplemented[fname], fname) from None
            raise NotImplementedYet(str(exc) or "raises NotImplementedError") from None

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
            reply = self._request({"op": "call_native", "fname": fname, "args": _handles(args),
                                   "kwargs": _handles(kwargs), "autocast": call.autocast}, f"{fname}(...)", fname)
        except Exception as exc:
            self._raised(call, exc)
            raise
        (call.args, call.kwargs), call.after = reply["before"], reply["after"]
        call.result, call.seen_dtype = reply["values"], reply.get("dtype")
        return reply["result"]

    def call(self, fname: str, *args, **kwargs):
        call = self._record(Call(self, fname, args, kwargs))
        self.function(fname, *kwargs)
        try:
            reply = self._request({"op": "call", "fname": fname, "dtype": self.dtype, "args": args,
                                   "kwargs": kwargs}, _describe_call(fname, args, kwargs), fname)
        except Exception as exc:
            self._raised(call, exc)
            raise
        call.seen_dtype = reply.get("dtype")
        out = reply["result"]
        call.result = out
        _remember(out, call)
        return out

