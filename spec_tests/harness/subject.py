"""The implementation under test, in one dtype: what a spec test calls.

    out = impl.scaled_dot_product_attention(q, k, v, mask=mask)

takes NumPy inputs, hands the implementation arrays of its own backend and
dtype, and returns its result as NumPy float64. It also remembers each call,
so that a failure can print a snippet that reproduces it.

Complete or red: a missing v1 function, or one raising NotImplementedError, fails the test as
"not implemented" (the run stays red); a later chapter's function is optional, and its tests are
skipped as "not implemented". A NotImplementedError raised for the plain case (a call with NumPy
inputs and no keyword beyond its default) makes the function "not implemented" for the rest of the
session; raised for one kind of input (a mask, a backward pass, native arrays), it decides that test
only, with the implementation's message. An input the implementation declares out of its scope
(harness/scope.py, OutOfScope) is not judged. A function outside the part of the contract a module declares
(CONTRACT = (...)) is "not applicable". A contract function without a keyword of the contract
(is_causal, scale, mask, eps, ...) fails every test that passes it, naming the keyword.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import sys
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from spec_tests.harness import arrays, feedback, scope
from spec_tests.harness.context import current
from spec_tests.harness.loader import LATER_KEYWORDS, TILING_KEYWORDS, Implementation

NOT_IMPLEMENTED = "not implemented"
NOT_APPLICABLE = "not applicable"


class NotImplementedYet(BaseException):
    """The implementation lacks `fname` or raised NotImplementedError: its claims are "not implemented".

    A BaseException, not an Exception, so that Hypothesis stops at once: an input cannot make an
    unwritten function work, and shrinking it would cost a fifth of a second per test on the template.
    The plugin turns it into a skip when `fname` is optional (a later chapter's function), or when it was
    raised for a call that passed a later chapter's keyword (`later`: sinks=, return_lse=, ...), which is
    optional as that chapter is, whatever function takes it.
    """

    def __init__(self, text: str = "", fname: str | None = None, later: bool = False):
        super().__init__(text)
        self.fname = fname
        self.later = later


class MissingKeyword(BaseException):
    """A contract function exists but lacks a keyword of the contract: every test passing it fails.

    A BaseException for the same reason as NotImplementedYet: no input can make the call work."""


def _contract_signature(fname: str) -> str:
    import inspect as _inspect

    import reference

    fn = getattr(reference, fname, None)
    try:
        return f"{fname}{_inspect.signature(fn)}" if fn is not None else fname
    except (TypeError, ValueError):
        return fname


def not_applicable(reason: str):
    """Skip: this check does not apply to this implementation or dtype (e.g. no autograd in NumPy)."""
    pytest.skip(f"{NOT_APPLICABLE}: {reason}")


@dataclass(eq=False)
class Call:
    """One call of the implementation, with the float64 inputs as the suite drew them."""

    subject: "Subject"
    fname: str
    args: tuple
    kwargs: dict
    result: Any = None
    seen_dtype: str | None = None
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # the exception's type name, if the call raised
    native: bool = False  # made by a test with native arrays (call_native): `after` holds them afterwards
    after: Any = None  # (args, kwargs) as float64 after the call: an implementation may have written into them
    test: str = field(default_factory=lambda: current().nodeid)  # the test that made it
    autocast: str | None = None  # "device:dtype" when made inside torch.autocast (PREC-2)


def autocast_state() -> str | None:
    """"cpu:float16" when the caller is inside torch.autocast, else None (torch is never imported here)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    for device in ("cpu", "cuda"):
        try:
            if torch.is_autocast_enabled(device):
                return f"{device}:{str(torch.get_autocast_dtype(device)).replace('torch.', '')}"
        except (AttributeError, TypeError, RuntimeError):
            continue
    return None


# id(result array) -> (weakref to it, Call): lets an assertion find how a result was made.
_RESULTS: dict[int, tuple[weakref.ref, Call]] = {}


def _forget(key: int, ref) -> None:
    entry = _RESULTS.get(key) if _RESULTS is not None else None  # None at interpreter shutdown
    if entry is not None and entry[0] is ref:
        del _RESULTS[key]


def remember(result, call: Call) -> None:
    """Note that `call` made the arrays in `result`, for call_of (an isolated subject records its calls too)."""
    def add(a):
        if isinstance(a, np.ndarray):
            key = id(a)
            _RESULTS[key] = (weakref.ref(a, lambda r, key=key: _forget(key, r)), call)
        return a

    arrays.map_arrays(result, add)


def call_of(a) -> Call | None:
    """The call that produced array `a` (or the array it is a view of), if the suite made it."""
    while isinstance(a, np.ndarray):
        entry = _RESULTS.get(id(a))
        if entry is not None and entry[0]() is a:
            return entry[1]
        a = a.base
    return None


def _given(value) -> bool:
    """A keyword argument that asks for more than the plain case: not None, not False (mask, is_causal, scale)."""
    return value is not None and value is not False


@functools.lru_cache(maxsize=None)
def _keywords(fn) -> frozenset | None:
    """The keyword names fn accepts, or None when it takes **kwargs or has no signature."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return frozenset(params)


class Subject:
    """An implementation in one of its dtypes. Contract functions are attributes."""

    def __init__(self, impl: Implementation, dtype: str):
        self.impl = impl
        self.dtype = dtype
        self.history: list[Call] = []
        self._unimplemented: dict[str, str] = {}
        self._expecting_error = 0

    # -- identity -------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.impl.name

    @property
    def backend(self) -> str:
        return self.impl.backend

    @property
    def id(self) -> str:
        return f"{self.impl.name}-{self.dtype}"

    def __repr__(self) -> str:
        return self.id

    # -- arrays ---------------------------------------------------------------
    def native(self, x):
        """x (NumPy) as the implementation's array: floats in this dtype, bools as bools."""
        return arrays.map_arrays(x, lambda a: arrays.to_native(a, self.backend, self.dtype, self.impl.device))

    def round(self, x):
        """The float64 values the implementation sees when given x."""
        return arrays.map_arrays(x, lambda a: arrays.round_trip(a, self.dtype))

    def to_numpy(self, y):
        return arrays.map_arrays(y, arrays.to_numpy)

    @property
    def eps(self) -> float:
        from spec_tests.harness import carried  # the precision it reached: float32 inside float64 is PREC-3's

        return arrays.EPS[carried.judged_dtype(self)]

    # -- functions ------------------------------------------------------------
    def has(self, fname: str, *keywords: str) -> bool:
        fn = getattr(self.impl.module, fname, None)
        if not callable(fn):
            return False
        return not self._missing_keywords(fn, keywords)

    def callable(self, fname: str) -> bool:
        """Whether a test may choose to call `fname`: the module has it, inside its declared CONTRACT, and it
        has not raised NotImplementedError for the plain case (a test that draws which function to call,
        PREC-3, draws among these)."""
        return self.has(fname) and self.impl.in_scope(fname) and fname not in self._unimplemented

    @staticmethod
    def _missing_keywords(fn, keywords) -> list[str]:
        accepted = _keywords(fn)
        return [] if accepted is None else [k for k in keywords if k not in accepted]

    def function(self, fname: str, *keywords: str):
        """The raw function, or the test's verdict when it cannot be called as the test needs."""
        fn = getattr(self.impl.module, fname, None)
        accepted = _keywords(fn) if callable(fn) else None
        self.require(fname, keywords, callable(fn), accepted)
        return fn

    def require(self, fname: str, keywords, present: bool, accepted) -> None:
        """Decide a call the implementation cannot take (shared with isolation.IsolatedSubject):
        outside its declared CONTRACT: not applicable; missing: not implemented (a failure for a
        required function, a skip for an optional one); without a contract keyword: a failure."""
        impl = self.impl
        if not impl.in_scope(fname):
            not_applicable(f"{self.name} declares CONTRACT = {impl.contract}, which leaves out {fname}()")
        if not present:
            text = f"{self.name} has no function {fname}()"
            if impl.requires(fname):
                raise NotImplementedYet(f"{text}: the contract requires it (docs/contract.md)", fname)
            pytest.skip(f"{NOT_IMPLEMENTED}: {text}")
        missing = [] if accepted is None else [k for k in keywords if k not in accepted]
        tiling = [k for k in missing if k in TILING_KEYWORDS]
        if tiling:
            not_applicable(f"{self.name}.{fname}() takes no {'/'.join(tiling)}: the claim is about tiled "
                           "implementations, which take block sizes")
        later = [k for k in missing if k in LATER_KEYWORDS]
        required = [k for k in missing if k not in later]
        if required:
            raise MissingKeyword(
                f"{self.name}.{fname}() has no keyword {', '.join(repr(k) for k in required)}, which the contract "
                f"gives it: {_contract_signature(fname)} (docs/contract.md). Every test passing "
                f"{', '.join(required)} fails until the function takes it.")
        if later:
            pytest.skip(f"{NOT_IMPLEMENTED}: {self.name}.{fname}() takes no keyword {', '.join(later)} "
                        "(a later chapter's extension)")
        if fname in self._unimplemented:
            raise NotImplementedYet(self._unimplemented[fname], fname)

    def _invoke(self, fname: str, *args, plain: bool = False, **kwargs):
        fn = self.function(fname, *kwargs)
        nodeid = current().nodeid
        try:
            result = fn(*args, **arrays.with_generators(kwargs, self.backend, self.impl.device))
        except scope.OutOfScope as exc:  # declared scope (harness/scope.py): this input is not judged
            scope.declared(nodeid, exc)
        except NotImplementedError as exc:
            raise self.unimplemented(fname, exc, kwargs, plain) from None
        scope.judged(nodeid)
        return result

    def unimplemented(self, fname: str, exc: NotImplementedError, kwargs: dict, plain: bool) -> NotImplementedYet:
        """What a NotImplementedError of `fname` decides (shared with isolation.IsolatedSubject): raised for
        the plain case (NumPy inputs, no keyword given), the whole function, for the rest of the session;
        for one kind of input (a keyword, a backward pass, native arrays), this test only."""
        text = str(exc)
        text = text if fname in text else f"{fname}: {text or 'raises NotImplementedError'}"
        asked = [k for k, v in kwargs.items() if _given(v)]
        if plain and not asked:  # the plain case: the whole function
            self._unimplemented[fname] = text
        else:  # one kind of input (a keyword, a backward pass): this test only
            text = f"{text} (raised for this input only{': ' + ', '.join(asked) if asked else ''})"
        return NotImplementedYet(text, fname, later=any(k in LATER_KEYWORDS for k in asked))

    @contextlib.contextmanager
    def expecting_error(self):
        """Calls inside may raise: the check itself judges the exception (check.raises_value_error)."""
        self._expecting_error += 1
        try:
            yield
        finally:
            self._expecting_error -= 1

    def _raised(self, call: Call, exc: Exception) -> None:
        """The implementation raised: remember it; on input the spec calls valid, that is the failure.

        A test calls the implementation without a `raises` check only on valid input, so an exception
        there (other than NotImplementedError) is reported as a claim failure, with the input, the
        known-bug diagnosis and a snippet, instead of a bare traceback from inside the suite."""
        call.error = type(exc).__name__
        if self._expecting_error or isinstance(exc, (NotImplementedError, feedback.SpecFailure)) or scope.is_rejection(exc):
            return
        from spec_tests.harness import carried  # carried.py builds on this module's subjects

        reason = carried.raised_by_its_lower_function(self, call.fname, exc)
        if reason:
            not_applicable(reason)
        try:
            feedback.fail(self, f"{call.fname} on valid input returns a result",
                          [f"raised {type(exc).__name__}: {exc}".rstrip(": "),
                           "nothing in this input is invalid under the contract (CONTRACT.md); "
                           "an exception here is the bug"], [call])
        except feedback.SpecFailure as failure:
            raise failure from exc

    def _record(self, call: Call) -> Call:
        self.history.append(call)
        del self.history[:-8]
        return call

    def call_native(self, fname: str, *args, **kwargs):
        """Call with native arrays as given; return the native result (for dtype and hygiene checks).

        The call is remembered with its inputs as float64 before and after, and its result, so that a
        failure can be compared with known bugs (diagnosis.py)."""
        call = self._record(Call(self, fname, *self.to_numpy((args, kwargs)), native=True, autocast=autocast_state()))
        try:
            result = self._invoke(fname, *args, **kwargs)
        except Exception as exc:
            self._raised(call, exc)
            raise
        call.after = self.to_numpy((args, kwargs))
        first = result[0] if isinstance(result, (tuple, list)) and result else result
        if hasattr(first, "dtype"):
            call.seen_dtype = arrays.native_dtype_name(first)
        call.result = self.to_numpy(result)
        return result

    def call(self, fname: str, *args, **kwargs):
        """Call with NumPy inputs; return NumPy float64 results and remember the call."""
        call = self._record(Call(self, fname, args, kwargs))
        try:
            result = self._invoke(fname, *self.native(args), plain=True, **self.native(kwargs))
        except Exception as exc:
            self._raised(call, exc)
            raise
        first = result[0] if isinstance(result, (tuple, list)) and result else result
        if hasattr(first, "dtype"):
            call.seen_dtype = arrays.native_dtype_name(first)
        out = self.to_numpy(result)
        call.result = out
        remember(out, call)
        from spec_tests.harness import carried  # carried.py builds on this module's subjects

        reason = carried.wrong_shape_carried(self, fname, args, out)
        if reason:
            not_applicable(reason)
        return out

    def __getattr__(self, fname: str):
        if fname.startswith("_"):
            raise AttributeError(fname)

        def bound(*args, **kwargs):
            return self.call(fname, *args, **kwargs)

        bound.__name__ = fname
        return bound
