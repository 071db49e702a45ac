"""Assertions of the spec: against the reference, between two results, and exact ones.

Each raises `SpecFailure` with the whole feedback (feedback.py) and returns the
implementation's result, so a test reads as a list of checks:

    out = check.oracle(impl, "scaled_dot_product_attention", q, k, v, mask=mask)
    check.close(impl, out[perm], impl.scaled_dot_product_attention(q[perm], k, v), "permuting queries ...")
"""

from __future__ import annotations

import re

import numpy as np

import reference
from spec_tests.harness import carried, scope, tolerance
from spec_tests.harness.feedback import (SpecFailure, digits_to_tell, fail, fmt_array, fmt_value, input_values,
                                        precision_note)
from spec_tests.harness.subject import call_of

def _calls(*arrays):
    found = []
    for a in arrays:
        c = call_of(a)
        if c is not None and c not in found:
            found.append(c)
    return found


def _where(err: np.ndarray) -> tuple:
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape)) if err.ndim else ()


def compare(subject, seen, expected, bound: tolerance.Bound, what: str, calls=(), hint_data=None, inputs=False) -> None:
    """seen must have expected's shape, no NaN/inf where expected is finite, and error <= bound.
    `inputs`: the failure also lists the values of the first call's inputs (feedback.input_values)."""
    seen = np.asarray(seen, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    data = dict(hint_data or {}, seen=seen, expected=expected, what=what)
    if seen.shape != expected.shape:
        fail(subject, what, [f"expected shape {expected.shape}, seen shape {seen.shape}"], calls, data)
    bad = ~np.isfinite(seen) & np.isfinite(expected)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        fail(subject, what, [
            f"seen {int(bad.sum())} non-finite value(s) (NaN or inf) where the reference is finite, "
            f"first at index {idx}: expected {expected[idx]:.6g}, seen {seen[idx]}",
            f"expected: {fmt_array(expected)}", f"seen:     {fmt_array(seen)}",
        ], calls, data)
    with np.errstate(invalid="ignore"):
        err = np.where(np.isfinite(expected), np.abs(seen - expected), 0.0)
    worst = float(err.max()) if err.size else 0.0
    if worst > bound.allowed:
        idx = _where(err)
        n = digits_to_tell(expected, seen)  # enough digits to see the difference
        rel = worst / max(abs(float(expected[idx])), 1e-300)
        lines = [
            f"expected: {fmt_array(expected, digits=n)}",
            f"seen:     {fmt_array(seen, digits=n)}",
            f"largest error {worst:.3g} (relative {rel:.3g}) at index {idx} (expected {fmt_value(expected[idx], n)}, "
            f"seen {fmt_value(seen[idx], n)}); allowed {bound.allowed:.3g} ({bound.rule})",
        ]
        note = precision_note(expected, seen, getattr(subject, "dtype", None))
        if note:
            lines.append(note)
        if inputs and calls:
            lines[:0] = input_values(calls[0])
        fail(subject, what, lines, calls, data)


def oracle(subject, fname: str, *args, impl_only: dict | None = None, **kwargs):
    """Call `fname` on the implementation and compare with the float64 reference; return the result.

    The bound is tolerance.bound_against's (the one tolerance model): nothing here or in a test picks it.
    `impl_only`: keywords for the implementation alone, which the reference does not take
    (e.g. block sizes: `impl_only=dict(block_q=1, block_k=7)`).
    """
    seen = subject.call(fname, *args, **kwargs, **(impl_only or {}))
    oracle_fn = getattr(reference, fname)
    r_args, r_kwargs = subject.round(args), subject.round(kwargs)
    expected = oracle_fn(*r_args, **r_kwargs)
    bounds = tolerance.bound_against(subject.dtype, oracle_fn, r_args, r_kwargs, expected, fname)
    calls = _calls(seen if not isinstance(seen, tuple) else seen[0])
    pairs = zip(seen, expected, bounds) if isinstance(seen, tuple) else [(seen, expected, bounds)]
    for n, (s, e, b) in enumerate(pairs):
        label = f"{fname}(...) against the float64 reference" + (f" (result {n})" if isinstance(seen, tuple) else "")
        try:
            compare(subject, s, e, b, label, calls)
        except SpecFailure as failure:  # error carried forward, precision charged once (carried.py)
            carried.judge(subject, fname, args, kwargs, n, seen, failure,
                          lambda s_, e_, bound, what: compare(subject, s_, e_, bound, what, calls))
    return seen


def against(subject, seen, oracle_fn, args, kwargs, what: str, expected=None, last=None):
    """`seen` (computed by the test from the implementation's functions) against `oracle_fn(*args, **kwargs)`
    on the inputs rounded to the implementation's dtype, under the reference bound (yardstick included);
    `last`: see tolerance.bound_against."""
    r_args, r_kwargs = subject.round(args), subject.round(kwargs)
    if expected is None:
        expected = oracle_fn(*r_args, **r_kwargs)

    def at(dtype):
        bound = tolerance.bound_against(dtype, oracle_fn, r_args, r_kwargs, expected, last=last)
        compare(subject, seen, expected, bound, what, _calls(seen))

    try:
        at(subject.dtype)
    except SpecFailure as failure:  # float32 inside float64 is charged once, to PREC-3 (carried.py)
        carried.judge_precision(subject, failure, at)
    return expected


def carried_forward(subject, seen, oracle_fn, args, kwargs, what: str, carry, expected=None, last=None) -> None:
    """check.against, with error carried forward (carried.py): when `seen` fails against the reference and
    some of the lower functions named in `carry` fail their own claims, it is judged again against the reference
    built on the implementation's own ones of them (the bug is charged to their claims), and the report says so.

    oracle_fn: a function of the reference built on others (carried.COMPOSITIONS: multi_head_attention), or a
    composite that takes the functions named in `carry` as keyword arguments (a test's residual block):

        check.carried_forward(impl, out, block, (x, w, gamma, beta), {}, what,
                              carry=("layer_norm", "multi_head_attention"))
    """
    try:
        against(subject, seen, oracle_fn, args, kwargs, what, expected, last)
    except SpecFailure as failure:
        r_args, r_kwargs = subject.round(args), subject.round(kwargs)

        def again(built, how):  # at the precision reached: float32 inside float64 is PREC-3's (carried.py)
            bound = tolerance.bound_against(carried.judged_dtype(subject), oracle_fn, r_args, r_kwargs, built,
                                            last=last)
            compare(subject, seen, built, bound, f"{what}, {how}")

        carried.judge_composite(subject, oracle_fn, r_args, r_kwargs, carry, failure, again)


def close(subject, a, b, relation: str, size: float | None = None, hint_data=None) -> None:
    """Two results of the same implementation that the math says are equal."""
    scale = size if size is not None else tolerance.magnitude(a, b)
    bound = tolerance.relation_bound(subject.dtype, scale)
    try:
        compare(subject, a, b, bound, relation, _calls(a, b), hint_data)
    except SpecFailure as failure:  # float32 inside float64 is charged once, to PREC-3 (carried.py)
        carried.judge_relation(subject, scale, failure,
                               lambda bound_: compare(subject, a, b, bound_, relation, _calls(a, b), hint_data))


def equal(subject, a, b, what: str) -> None:
    """Bit-for-bit equality (data movement, determinism)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
        details = [f"first: {fmt_array(a)}", f"second: {fmt_array(b)}"]
        if a.shape == b.shape:
            diff = np.argwhere(~((a == b) | (np.isnan(a) & np.isnan(b))))
            details.append(f"{len(diff)} element(s) differ, first at index {tuple(int(i) for i in diff[0])}")
        else:
            details.append(f"shapes differ: {a.shape} vs {b.shape}")
        fail(subject, what, details, _calls(a, b))


def exactly(subject, seen, expected, what: str) -> None:
    """seen equals expected exactly (exact claims: zeros, known values, shapes)."""
    seen, expected = np.asarray(seen, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if seen.shape != expected.shape:
        fail(subject, what, [f"expected shape {expected.shape}, seen {seen.shape}"], _calls(seen))
    wrong = ~((seen == expected) | (np.isnan(seen) & np.isnan(expected)))
    if wrong.any():
        idx = tuple(int(i) for i in np.argwhere(wrong)[0])
        fail(subject, what, [
            f"expected exactly: {fmt_array(expected)}", f"seen:             {fmt_array(seen)}",
            f"{int(wrong.sum())} element(s) differ, first at index {idx}: expected {expected[idx]!r}, seen {seen[idx]!r}",
        ], _calls(seen), dict(seen=seen, expected=expected, what=what))


def shape(subject, seen, expected_shape: tuple, what: str) -> None:
    if tuple(np.shape(seen)) != tuple(expected_shape):
        fail(subject, what, [f"expected shape {tuple(expected_shape)}, seen {tuple(np.shape(seen))}"], _calls(seen))


def holds(subject, condition: bool, what: str, details=(), arrays=()) -> None:
    """A property check: `condition` must be true."""
    if not condition:
        fail(subject, what, list(details), _calls(*arrays))


_SHAPE = re.compile(r"^\(\s*\d+\s*(?:,\s*\d+\s*)*,?\s*\)$")  # "(3, 5)", "(5,)": a shape as Python prints it
# Numbers in a row, separated by a comma, "x", "×" or "*" (with or without spaces): 3, 5 / 3,5 / 3x5 / 3 × 5
_NUMBER_RUN = re.compile(r"(?<![\d.])\d+(?:\s*(?:,|x|×|\*)\s*\d+)*(?!\.?\d)")


def _shape_of(name) -> tuple[int, ...] | None:
    """The dimensions when `name` is a shape written as a tuple ("(3, 5)", "(5,)"), else None."""
    if isinstance(name, str) and _SHAPE.match(name.strip()):
        return tuple(int(n) for n in re.findall(r"\d+", name))
    return None


def names_shape(message: str, dims: tuple[int, ...]) -> bool:
    """Does the message name this shape, in any common spelling? (3, 5), (3,5), [3, 5], 3x5, 3 x 5, 3×5,
    torch.Size([3, 5]); the numbers in order and as a whole run (not part of (2, 3, 5)). A shape of one
    dimension must be bracketed: (5,), (5), [5], torch.Size([5])."""
    dims = tuple(int(d) for d in dims)
    if len(dims) == 1:
        return re.search(rf"[(\[]\s*{dims[0]}\s*,?\s*[)\]]", message) is not None
    for run in _NUMBER_RUN.finditer(message):
        if tuple(int(n) for n in re.findall(r"\d+", run.group())) == dims:
            return True
    return False


def _names(message: str, name) -> bool:
    """Does the message mention `name`: a shape ("(3, 5)") in any spelling, a number as a whole token,
    a word anywhere (case-insensitive)?"""
    if isinstance(name, tuple):  # any of several spellings
        return any(_names(message, n) for n in name)
    if isinstance(name, (int, float)):
        return re.search(rf"(?<![\d.]){re.escape(str(name))}(?![\d])", message) is not None
    dims = _shape_of(name)
    if dims is not None:
        return names_shape(message, dims)
    return str(name).lower() in message.lower()


def raises_value_error(subject, fname: str, args: tuple, kwargs: dict, names=(), what: str | None = None):
    """Calling fname on bad input raises ValueError, and its message names each of `names`."""
    what = what or f"{fname} on bad input raises ValueError naming {', '.join(map(str, names)) or 'the problem'}"
    try:
        with subject.expecting_error():
            result = subject.call(fname, *args, **kwargs)
    except ValueError as exc:
        msg = str(exc)
        missing = [n for n in names if not _names(msg, n)]
        if missing:
            fail(subject, what, [f"raised ValueError({msg!r})", f"but the message does not name {missing}"],
                 subject.history[-1:])
        return exc
    except Exception as exc:  # noqa: BLE001 - any other exception is the failure being reported
        if scope.is_rejection(exc):  # the implementation declared this input out of its scope
            raise
        fail(subject, what, [f"expected ValueError, got {type(exc).__name__}: {exc}"], subject.history[-1:])
    shapes = np.shape(result[0] if isinstance(result, tuple) else result)
    fail(subject, what, [f"expected ValueError, but it returned a result of shape {shapes}: "
                         "bad input must never be computed with silently"], subject.history[-1:])
