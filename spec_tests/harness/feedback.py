"""Failure messages that read like a tutor's feedback.

Every failure says: which claim broke (ID and statement), for which
implementation and dtype, on which input, what was expected and what was seen,
the likely cause when a known bug matches, a snippet to paste into Python that
reproduces it, and the chapter to read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from spec_tests.harness import arrays
from spec_tests.harness import claims as claim_catalogue
from spec_tests.harness import notebook
from spec_tests.harness.context import CURRENT, current

LITERAL_LIMIT = 64  # arrays with more elements than this are saved to a .npz file
REPRO_DIR = Path(".spec_repro")

# Hooks that may add a "likely cause" line: fn(failure: dict) -> str | None, or a (label, text) pair for a
# line that names no cause (the diagnosis's "looks like: ...").
DIAGNOSERS: list = []


class SpecFailure(AssertionError):
    """A claim does not hold for an implementation; str() is the whole feedback.

    The costly end of the message (the known-bug diagnosis, the reproduction snippet) is written
    when the message is first read: while Hypothesis shrinks an input it raises and catches many
    failures, and reads only the last one's message.
    """

    def __init__(self, text: str, later=None):
        super().__init__(text)
        self._text, self._later = text, later

    def __str__(self) -> str:
        if self._later is not None:
            later, self._later = self._later, None
            self._text = "\n".join([self._text, *later()])
            self.args = (self._text,)
        return self._text


def fmt_array(a, limit: int = 6, digits: int = 6) -> str:
    a = np.asarray(a)
    if a.size <= 24:
        text = np.array2string(a, precision=digits, separator=", ", suppress_small=False, max_line_width=100)
        return text.replace("\n", "\n" + " " * 12)
    first = np.array2string(a.reshape(-1)[:limit], precision=digits, separator=', ')
    return f"array of shape {a.shape} (first values {first}...)"


def digits_to_tell(expected, seen, least: int = 6) -> int:
    """Significant digits that show where `seen` parts from `expected` (6 at least, 17 at most)."""
    e, s = np.asarray(expected, dtype=np.float64), np.asarray(seen, dtype=np.float64)
    if e.shape != s.shape or not e.size:
        return least
    with np.errstate(all="ignore"):
        err = np.abs(e - s)
        ok = np.isfinite(err) & (err > 0)
        if not ok.any():
            return least
        i = np.argmax(np.where(ok, err, -1.0))
        ref = max(abs(float(e.flat[i])), abs(float(s.flat[i])))
        if ref == 0.0:
            return least
        need = int(np.ceil(np.log10(ref / float(err.flat[i])))) + 2
    return int(min(17, max(least, need)))


def fmt_value(x, digits: int = 6) -> str:
    return f"{float(x):.{digits}g}"


# Relative error of one rounding in each dtype: an error of about this size says "computed in this dtype".
_UNIT = {"float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
# The lower precisions a run of each dtype can hide inside (a float16 or bfloat16 run has none: its own
# precision is the lowest, and a note naming another dtype would name one the run did not use).
_LOWER = {"float64": ("float32", "float16", "bfloat16"), "float32": ("float16", "bfloat16")}
_BAND = (0.25, 64.0)  # an error from a quarter of the lower dtype's unit to 64 units is "of its size"
_BARE_BAND = 16.0  # without the values to show it, only an error of a few float32 units suggests float32


def _exact_in(values: np.ndarray, low: str) -> bool:
    with np.errstate(all="ignore"):
        return bool(np.array_equal(arrays.round_trip(values, low), values))


def precision_note(expected, seen, dtype: str | None = None) -> str | None:
    """Does the error look like computing in a lower precision than `dtype` (float32 inside float64, ...)?

    Only when it is true: the run's dtype has a lower precision to hide (float64 or float32), the seen
    values carry information (a nonzero finite one at least: zeros are exact in every dtype), the
    largest error relative to the output is of the lower dtype's size (_BAND of its unit roundoff, so not
    an error of 1e+300), and, for "every value seen is exactly a <low>", every seen value is one while
    the expected ones are not and the values are not all exact in a still lower dtype. Without exact
    values, only an error of a few float32 units (_BARE_BAND) is said to look like float32."""
    e, s = np.asarray(expected, dtype=np.float64), np.asarray(seen, dtype=np.float64)
    if dtype not in _LOWER or e.shape != s.shape or not e.size:
        return None
    finite = np.isfinite(s) & np.isfinite(e)
    f, g = s[finite], e[finite]
    scale = float(np.abs(g).max()) if g.size else 0.0
    if not np.count_nonzero(f) or scale == 0.0:
        return None
    rel = float(np.abs(f - g).max()) / scale
    fits = [low for low in _LOWER[dtype] if _BAND[0] * _UNIT[low] <= rel <= _BAND[1] * _UNIT[low]]
    exact = [low for low in fits if _exact_in(f, low) and not _exact_in(g, low)]
    for low in exact:
        lower = [x for x in _LOWER[dtype] if _UNIT[x] > _UNIT[low]]
        if not any(_exact_in(f, x) for x in lower):
            return (f"every value seen is exactly a {low}, and the error (relative {rel:.2g}) is {low}'s size: the "
                    f"computation ran in {low} (a torch.tensor(...) or .astype away?) and was cast back to {dtype}")
    if "float32" in fits and rel <= _BARE_BAND * _UNIT["float32"]:  # float32 steps inside, values not float32
        return (f"a relative error of {rel:.2g} is what computing in float32 gives (its unit roundoff is "
                f"{_UNIT['float32']:.2g})")
    return None  # an error of half precision's size without half-precision values: a bug as likely as a dtype


def describe(value) -> str:
    """A short description of one input: shape and dtype, or the value."""
    if isinstance(value, np.ndarray):
        if value.dtype == np.bool_:
            dead = ""
            if value.ndim >= 1 and value.shape[-1] > 0:
                rows = ~value.any(axis=-1)
                if rows.any():
                    dead = f", {int(rows.sum())} row(s) with nothing visible"
            return f"bool {value.shape}{dead}"
        if value.dtype.kind in "iu" and value.size <= 24:  # positions, lengths, buckets: the values are the point
            return f"{value.dtype} {np.array2string(value, separator=', ')}"
        return f"{value.shape}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {describe(v)}" for k, v in value.items()) + "}"
    return repr(value)


def input_values(call) -> list[str]:
    """The values of a call's inputs, as the implementation saw them (rounded to its dtype), one line each:
    "q = [[0.345584]]" (a large array by its shape and first values, as fmt_array writes it)."""
    subject = call.subject
    named = list(zip(_param_names(call.fname, len(call.args)), call.args)) + list(call.kwargs.items())
    lines = []
    for name, value in named:
        if isinstance(value, np.ndarray):
            value = subject.round(value) if subject is not None else value
            text = fmt_array(value).replace("\n" + " " * 12, "\n" + " " * (len(name) + 5))  # under the first "["
            lines.append(f"{name} = {text}")
    return lines


def _literal(a: np.ndarray) -> str:
    if a.dtype == np.bool_:
        body = np.array2string(a.astype(int), separator=", ", threshold=10**9, max_line_width=10**9)
        return f"np.array({body}, dtype=bool)"
    body = np.array2string(a, separator=", ", threshold=10**9, floatmode="unique", max_line_width=10**9)
    return f"np.array({body})"


def _array_code(name: str, a: np.ndarray, saved: dict) -> str:
    if a.ndim == 0:
        return f"{name} = np.array({a.item()!r})"
    if a.size <= LITERAL_LIMIT:
        return f"{name} = {_literal(a)}"
    saved[name] = a
    return f'{name} = data["{name}"]'


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:120]


def _param_names(fname: str, n: int) -> list[str]:
    """Names for positional arguments: the reference's parameter names when it has the function."""
    import inspect

    import reference

    fn = getattr(reference, fname, None)
    try:
        names = [p for p in inspect.signature(fn).parameters] if fn else []
    except (TypeError, ValueError):
        names = []
    return [names[i] if i < len(names) else f"arg{i}" for i in range(n)]


def _cast_line(subject) -> str:
    """How the harness hands a float64 NumPy array to this implementation."""
    if subject.backend == "numpy":
        return f'cast = lambda x: x.astype("{subject.dtype}") if x.dtype.kind == "f" else x  # floats only'
    staged = "float32" if subject.dtype == "bfloat16" else subject.dtype  # the values are exact in it
    device = subject.impl.device
    return (f"cast = lambda x: (torch.from_numpy(x.astype(\"{staged}\")).to(device=\"{device}\", "
            f"dtype=torch.{subject.dtype}) if x.dtype.kind == \"f\" else torch.from_numpy(x).to(\"{device}\"))")


def reproduction(call, extra_calls=()) -> str:
    """Python code that loads the implementation, rebuilds the inputs and repeats the call(s)."""
    calls = [call, *extra_calls]
    subject = call.subject
    spec = current().impl_spec or subject.impl.path or subject.name
    head = ["import numpy as np"] + (["import torch"] if subject.backend == "torch" else [])
    head += ["from spec_tests import load_impl", "import reference  # the float64 reference (found through spec_tests)",
             f"impl = load_impl({spec!r})", _cast_line(subject)]
    saved: dict[str, np.ndarray] = {}
    body: list[str] = []
    for n, c in enumerate(calls):
        suffix = "" if n == 0 else str(n + 1)
        names = [_emit(f"{p}{suffix}", a, body, saved, subject)
                 for p, a in zip(_param_names(c.fname, len(c.args)), c.args)]
        kws = {k: _emit(f"{k}{suffix}", v, body, saved, subject) for k, v in c.kwargs.items()}
        plain = ", ".join(names + [f"{k}={v}" for k, v in kws.items()])
        native = ", ".join([_cast_expr(v, a) for v, a in zip(names, c.args)]
                           + [f"{k}={_cast_expr(v, c.kwargs[k])}" for k, v in kws.items()])
        body.append(f"out{suffix} = impl.{c.fname}({native})")
        body.append(f"expected{suffix} = reference.{c.fname}({plain})")
    if saved:
        REPRO_DIR.mkdir(exist_ok=True)
        path = REPRO_DIR / f"{_safe(current().nodeid or call.fname)}.npz"
        np.savez(path, **saved)
        head.append(f"data = np.load({str(path.resolve())!r})")
    outs = ", ".join(f"out{'' if n == 0 else n + 1}, expected{'' if n == 0 else n + 1}" for n in range(len(calls)))
    return "\n".join(head + body + [f"print({outs}, sep=chr(10))"])


def _cast_expr(name: str, value) -> str:
    if isinstance(value, np.ndarray):
        return f"cast({name})"
    if isinstance(value, dict):
        return f"{{key: cast(val) for key, val in {name}.items()}}"
    return name


def _emit(name, value, body, saved, subject=None) -> str:
    if isinstance(value, np.ndarray):
        if subject is not None:  # print the values the implementation saw (rounded to its dtype)
            value = subject.round(value)
        body.append(_array_code(name, value, saved))
        return name
    if isinstance(value, dict):
        parts = {k: _emit(f"{name}_{k}", v, body, saved, subject) for k, v in value.items()}
        body.append(f"{name} = {{" + ", ".join(f"{k!r}: {v}" for k, v in parts.items()) + "}")
        return name
    return repr(value)


def indent(text: str, n: int = 6) -> str:
    pad = " " * n
    return "\n".join(pad + line if line else line for line in text.splitlines())


def header(subject, claim_ids=None) -> list[str]:
    info = current()
    ids = claim_ids or info.claims or ()
    lines = []
    for cid in ids:
        try:
            c = claim_catalogue.get(cid)
            lines.append(f"{cid} does not hold: {c.statement}")
        except KeyError:
            lines.append(f"{cid} does not hold")
    if not lines:
        lines.append("A claim of the specification does not hold")
    if subject is not None:
        lines.append(f"  implementation: {subject.name} ({subject.backend}, {subject.dtype})")
    return lines


def footer(claim_ids=None) -> list[str]:
    ids = claim_ids or current().claims or ()
    docs = []
    for cid in ids:
        try:
            docs.append(claim_catalogue.get(cid).doc)
        except KeyError:
            pass
    return [f"  read: {', '.join(dict.fromkeys(docs))}"] if docs else []


def fail(subject, what: str, details: list[str], calls=(), hint_data: dict | None = None, claim_ids=None):
    """Raise SpecFailure with the whole message."""
    lines = header(subject, claim_ids)
    lines.append(f"  check: {what}")
    for c in calls[:1]:
        args = ", ".join(describe(a) for a in c.args)
        kws = ", ".join(f"{k}={describe(v)}" for k, v in c.kwargs.items())
        lines.append(f"  input: {c.fname}({', '.join(x for x in (args, kws) if x)})")
    for fname in dict.fromkeys(c.fname for c in calls):  # a notebook's function: the cell that defines it
        cell = notebook.located(getattr(subject, "impl", None), fname)
        if cell:
            lines.append(f"  {fname} is defined in {cell}")
    lines += [f"  {d}" for d in details]
    info = current()
    data = dict(hint_data or {}, subject=subject, calls=list(calls), claims=claim_ids or info.claims,
                history=list(getattr(subject, "history", ())), test=info.nodeid)

    def later() -> list[str]:
        token = CURRENT.set(info)  # the diagnosers and the snippet read the failing test's context
        try:
            return _ending(data, calls, claim_ids)
        finally:
            CURRENT.reset(token)

    raise SpecFailure("\n".join(lines), later)


def _ending(data: dict, calls, claim_ids) -> list[str]:
    """The likely cause (when a known bug matches), the reproduction snippet, the chapter to read."""
    lines = []
    for diagnose in DIAGNOSERS:
        try:
            h = diagnose(data)
        except Exception:  # a diagnoser must never hide the failure itself
            h = None
        if isinstance(h, tuple):  # (label, text): a line that is not a cause ("looks like: ...")
            lines.append(f"  {h[0]}: {h[1]}")
        elif h:
            lines.append(f"  likely cause: {h}")
    if calls and not os.environ.get("MHA_SPEC_NO_REPRO"):
        lines.append("  reproduce (paste into Python):")
        lines.append(indent(reproduction(calls[0], calls[1:2])))
    return lines + footer(claim_ids)
