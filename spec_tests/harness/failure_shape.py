"""What a failure looks like, in words, when no known bug is the one: the line a learner reads instead of a name.

From the expected (reference) and seen arrays of a failed comparison, `looks_like` says, in order:

    NaN / inf       how many non-finite values, in which rows
    all zero        every value seen is 0 (or every wrong row is 0)
    a factor        seen = r * expected for one r everywhere (r printed: 0.5 is a halved scale, ...)
    moved values    the right values in the wrong places: the rows, the columns, or a transpose
    which rows      the rows (the last axis is a row: a query's output, a token's features) that are
                    wrong, and which columns of them, when only some are
    how large       the largest error relative to the output's size
    sums            for attention weights: whether the seen rows still sum to 1

A value is wrong when it is off by more than `tolerance.relation_bound` of the dtype at the output's size
(the loosest of the bounds a claim applies, so a row named wrong is wrong under any of them).
"""

from __future__ import annotations

import numpy as np

from spec_tests.harness import tolerance

MAX_LISTED = 4  # rows or columns named one by one; more are counted


def _listed(indices, total: int, what: str) -> str:
    """"rows 0, 2 of 5", "row 3 of 4", "every row (all 4)"."""
    idx = [int(i) for i in indices]
    if len(idx) == total:
        return f"every {what} (all {total})"
    shown = ", ".join(map(str, idx[:MAX_LISTED])) + (f" and {len(idx) - MAX_LISTED} more" if len(idx) > MAX_LISTED else "")
    return f"{what}{'s' if len(idx) > 1 else ''} {shown} of {total}"


def _rows(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, a.shape[-1]) if a.ndim >= 2 else a.reshape(1, -1)


def _factor(e: np.ndarray, s: np.ndarray, bound: float) -> float | None:
    big = np.abs(e) > max(bound * 4, 1e-300)
    if np.count_nonzero(big) < 2:  # one value is always some factor times another
        return None
    r = s[big] / e[big]
    ratio = float(np.median(r))
    if abs(ratio - 1.0) < 1e-6 or not np.isfinite(ratio):
        return None
    return ratio if np.abs(s - ratio * e).max() <= 4 * bound + 1e-12 * abs(ratio) * np.abs(e).max() else None


def _moved(e: np.ndarray, s: np.ndarray, bound: float) -> str | None:
    """The right values in other places: rows swapped, a transpose, or values shuffled."""
    if e.size < 2 or np.abs(np.sort(e, axis=None) - np.sort(s, axis=None)).max() > bound:
        return None
    if e.ndim >= 2 and e.shape[-1] == e.shape[-2] and np.abs(np.swapaxes(e, -1, -2) - s).max() <= bound:
        return "the right values in the wrong places: the seen array is the expected one transposed (last two axes)"
    er, sr = _rows(e), _rows(s)
    if np.abs(np.sort(er, axis=0) - np.sort(sr, axis=0)).max() <= bound:
        return "the right rows in the wrong order (each seen row is an expected row, elsewhere)"
    if np.abs(np.sort(er, axis=1) - np.sort(sr, axis=1)).max() <= bound:
        return "the right values in each row, in the wrong columns"
    return "the right values (as a multiset) in the wrong places"


def _non_finite(e: np.ndarray, s: np.ndarray) -> str | None:
    bad = ~np.isfinite(s) & np.isfinite(e)
    if not bad.any():
        return None
    rows = np.flatnonzero(_rows(bad).any(axis=1))
    kinds = " and ".join(k for k, m in (("NaN", np.isnan(s)), ("inf", np.isinf(s))) if (m & bad).any())
    return f"{int(bad.sum())} {kinds} value(s) where the reference is finite, in {_listed(rows, _rows(e).shape[0], 'row')}"


def _where_wrong(e: np.ndarray, s: np.ndarray, bound: float) -> list[str]:
    wrong = np.abs(s - e) > bound
    er, wr, sr = _rows(e), _rows(wrong), _rows(s)
    rows = np.flatnonzero(wr.any(axis=1))
    out = [f"wrong values in {_listed(rows, er.shape[0], 'row')} (rows along the last axis, {er.shape[1]} "
           "value(s) each)"]
    cols = np.flatnonzero(wr.any(axis=0))
    if 0 < len(cols) < er.shape[1]:
        out.append(f"only in {_listed(cols, er.shape[1], 'column')}")
    if len(rows) and np.all(sr[rows] == 0) and not np.all(er[rows] == 0):
        out.append("the wrong rows are all zero")
    return out


def _sums(fname: str, e: np.ndarray, s: np.ndarray) -> str | None:
    if fname != "attention_weights" or e.ndim < 1:
        return None
    es, ss = e.sum(axis=-1), s.sum(axis=-1)
    live = np.abs(es - 1.0) < 1e-6
    if not live.any():
        return None
    hidden = (e == 0) & (s != 0)  # the reference's exact zeros: keys it hides
    leak = ""
    if hidden.any():
        rows = np.flatnonzero(_rows(hidden).any(axis=1))
        leak = f"; weight on {int(hidden.sum())} key(s) the reference gives exactly 0, in {_listed(rows, _rows(e).shape[0], 'row')}"
    if np.abs(ss[live] - 1.0).max() <= 1e-6:
        return "the seen rows still sum to 1 (a distribution, over the wrong keys or with the wrong sizes)" + leak
    return f"the seen rows do not sum to 1 (sums from {float(ss[live].min()):.4g} to {float(ss[live].max()):.4g})" + leak


def looks_like(expected, seen, dtype: str, fname: str = "") -> str | None:
    """The failure in words (see the module docstring); None when the arrays cannot be compared."""
    e, s = np.asarray(expected, dtype=np.float64), np.asarray(seen, dtype=np.float64)
    if e.shape != s.shape or not e.size or not np.isfinite(e).any():
        return None
    with np.errstate(all="ignore"):
        size = float(np.abs(e[np.isfinite(e)]).max())
        bound = tolerance.relation_bound(dtype, size or 1.0).allowed
        non_finite = _non_finite(e, s)
        if non_finite:
            return non_finite
        fin = np.isfinite(e)
        e, s = np.where(fin, e, 0.0), np.where(fin, s, 0.0)
        if not (np.abs(s - e) > bound).any():
            return None
        if np.all(s == 0):
            return "every value seen is 0"
        parts = []
        ratio = _factor(e, s, bound)
        if ratio is not None:
            parts.append(f"every value is {ratio:.6g} times the expected one (one constant factor)")
        else:
            moved = _moved(e, s, bound)
            parts += [moved] if moved else []
            parts += _where_wrong(e, s, bound)
        err = float(np.abs(s - e).max())
        parts.append(f"the largest error is {100 * err / size:.3g}% of the largest expected value" if size else
                     f"the largest error is {err:.3g} where the output is 0")
        sums = _sums(fname, e, s)
        parts += [sums] if sums else []
    return "; ".join(parts)
