"""Known bugs, caught and named only when one is the one: does a failing implementation behave like a mutant?

When a check fails, the calls it involved (or, for checks on native arrays, the test's last call)
are replayed on every mutant in impls/mutants/ and on their correct base, in the implementation's
dtype, on the same inputs. A mutant is a candidate when, on every replayed call, it does what the
implementation did:

    same exception (or none);  same result within the relation tolerance of the dtype
    (NaN and inf in the same places);  same result dtype;  the same writes into its inputs;
    and, for two calls on identical inputs, bit-identical results or not, alike;
    a call drawing from the caller's generator (dropout) that gives other results when it is made again
    with a generator in the same state compares only what a new draw cannot change: the error, the
    result's dtype and shapes, and whether it redraws (REDRAWN);

and the correct base does not (so the match is the bug, not agreement on what is right). A minimal
input hides differences (d_v = 1 makes a scale from d_v no scale; L = 2 makes an off-by-one causal
mask no mask), so a candidate is named only when, on the further inputs of probes.py (other d_k and
d_v, L_q != L_k both ways, several heads, batch > 1, with and without a mask and causal), run on the
implementation through its subject and on every candidate:

    the implementation fails again (differs from the base on at least one of them);
    the candidate does what the implementation does on every one of them;
    no other candidate does.

Known bugs that the catalogue records as one (SAME_BUG_AS: one mistake written for two backends or dtypes)
count as one candidate. The feedback then names the mutant's BUG in plain words. Otherwise it names none and says what the
failure looks like (failure_shape.py: which rows, how large, a constant factor, moved values, NaN).
One bug is one cause: once a bug is named for an implementation, a later failure that it reproduces
on its minimal input says "the known bug already named for CLAIM explains this failure too" (NAMED).
This diagnoser is in feedback.DIAGNOSERS, so it speaks in every failure message, in a plain
`pytest --impl` run as in grading.
"""

from __future__ import annotations

import contextlib
import importlib
import re
from functools import cache
from pathlib import Path

import numpy as np

from spec_tests.harness import arrays, failure_shape, feedback, packages, probes, tolerance

MUTANTS_DIR = packages.location("impls") / "mutants"
MAX_ELEMENTS = 5_000_000  # inputs larger than this are not replayed (the diagnosis must stay cheap)
MAX_CALLS = 4
NUMPY_DTYPES = ("float64", "float32")


def packages_needed(source: str) -> set[str]:
    """The optional packages (torch, triton) a mutant's source imports, itself or through the PyTorch or
    Triton implementation it is built on (which imports torch)."""
    needs = set(re.findall(r"^\s*(?:import|from)\s+(torch|triton)\b", source, re.M))
    if re.search(r"^\s*from\s+impls\.(torch|triton)_\w+\s+import", source, re.M):
        needs.add("torch")
    return needs


@cache
def mutants(with_torch: bool = False) -> list:
    """(name, module) of every mutant that imports, the correct base first; torch mutants only on request
    (a NumPy implementation cannot have their bugs, and importing torch costs seconds)."""
    found = []
    for path in sorted(MUTANTS_DIR.glob("*.py")):
        if path.stem == "__init__" or (not with_torch and "torch" in packages_needed(path.read_text())):
            continue
        try:
            found.append((path.stem, importlib.import_module(f"impls.mutants.{path.stem}")))
        except Exception:  # noqa: BLE001 - a broken mutant diagnoses nothing
            continue
    return sorted(found, key=lambda m: m[0] != "_base")


def _replay_dtype(module, dtype: str) -> str | None:
    """The dtype a mutant replays a call of `dtype` in: its own if it runs there, float32 for a NumPy
    mutant and a float16/bfloat16 call (on the rounded inputs), else None (it cannot compare)."""
    if dtype in getattr(module, "DTYPES", NUMPY_DTYPES):
        return dtype
    if getattr(module, "BACKEND", "numpy") == "numpy" and dtype not in NUMPY_DTYPES:
        return "float32"
    return None


class Behaviour:
    """What one call did: its error, result, result dtype and inputs afterwards (float64); `redrawn`: made again
    with a generator in the same state, it gave a result beyond the tolerance from this one (None: not asked)."""

    def __init__(self, error=None, result=None, dtype=None, after=None):
        self.error, self.result, self.dtype, self.after = error, result, dtype, after
        self.redrawn = None


# REDRAWN: a call with a generator (dropout's `generator=Seeded(..)`) is one draw of a random result. Made
# again with a generator in the same state it must give the same result (DROP-1); an implementation that
# ignores the generator gives another pattern every time, so no replay can match its values. For such a
# call the implementation and a known bug are compared on the redraw itself (both redraw, the same error,
# dtype and shapes), and a known bug that does not redraw is not that implementation's bug.
def _draws(call) -> bool:
    """The call passes a generator: its result may be a draw (dropout)."""
    return any(isinstance(v, arrays.Seeded) for v in call.kwargs.values())


def _redrawn(first: Behaviour, again: Behaviour, dtype: str) -> Behaviour:
    """`first`, marked redrawn when `again` (the same call, a generator in the same state) differs beyond tolerance."""
    first.redrawn = first.error is None and again.error is None and not _close(first.result, again.result, dtype)
    return first


def _shapes(value) -> list:
    return [np.shape(x) for x in _flat(value)]


def _observed(call) -> Behaviour:
    return Behaviour(call.error, call.result, call.seen_dtype, call.after if call.native else None)


def _replay(module, call, dtype: str, again: bool = False) -> Behaviour:
    """What `module` does on `call` in `dtype`; `again`: made twice, the second time to see whether it redraws."""
    if again:
        return _redrawn(_replay(module, call, dtype), _replay(module, call, dtype), dtype)
    fn = getattr(module, call.fname, None)
    if fn is None:
        return Behaviour(error="AttributeError")
    backend = getattr(module, "BACKEND", "numpy")
    cast = lambda a: arrays.to_native(a, backend, dtype)  # noqa: E731
    args, kwargs = arrays.map_arrays(call.args, cast), arrays.map_arrays(call.kwargs, cast)
    kwargs = arrays.with_generators(kwargs, backend)  # a fresh generator from the same seed
    try:
        with np.errstate(all="ignore"), _autocast(backend, call.autocast):
            result = fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - raising is a behaviour too
        return Behaviour(error=type(exc).__name__)
    first = result[0] if isinstance(result, (tuple, list)) and result else result
    seen = arrays.native_dtype_name(first) if hasattr(first, "dtype") else None
    after = arrays.map_arrays((args, kwargs), arrays.to_numpy) if call.native else None
    return Behaviour(None, arrays.map_arrays(result, arrays.to_numpy), seen, after)


def _autocast(backend: str, state: str | None):
    if backend != "torch" or not state:
        return contextlib.nullcontext()
    torch = arrays.torch_module()
    device, dtype = state.split(":")
    return torch.autocast(device_type=device, dtype=getattr(torch, dtype))


def _flat(value) -> list:
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _flat(value[k])]
    if isinstance(value, (tuple, list)):
        return [x for v in value for x in _flat(v)]
    return [value]


def _close(a, b, dtype: str) -> bool:
    """Two results (trees of arrays and scalars) agree within the relation tolerance of `dtype`."""
    fa, fb = _flat(a), _flat(b)
    if len(fa) != len(fb):
        return False
    for x, y in zip(fa, fb):
        if x is None or y is None or isinstance(x, (str, bool)) or isinstance(y, (str, bool)):
            if x != y:
                return False
            continue
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if x.shape != y.shape:
            return False
        fx, fy = np.isfinite(x), np.isfinite(y)
        if not np.array_equal(fx, fy) or not np.array_equal(x[~fx], y[~fy], equal_nan=True):
            return False
        bound = tolerance.relation_bound(dtype, tolerance.magnitude(x, y)).allowed
        if fx.any() and float(np.abs(x[fx] - y[fy]).max()) > bound:
            return False
    return True


def _same(a: Behaviour, b: Behaviour, dtype: str, compare_dtype: bool) -> bool:
    if a.error != b.error:
        return False
    if a.error is not None:
        return True
    if compare_dtype and a.dtype != b.dtype:
        return False
    if a.redrawn or b.redrawn:  # a new pattern on every call (REDRAWN): only the shapes can agree
        return bool(a.redrawn and b.redrawn) and _shapes(a.result) == _shapes(b.result)
    return _close(a.result, b.result, dtype) and (a.after is None or b.after is None or
                                                  _close(a.after, b.after, dtype))


def _repeats(calls, behaviours: list[Behaviour]) -> list[bool]:
    """For each pair of calls on bit-identical inputs: were their results bit-identical?"""
    out = []
    for i in range(len(calls)):
        for j in range(i + 1, len(calls)):
            if calls[i].fname == calls[j].fname and _identical((calls[i].args, calls[i].kwargs),
                                                               (calls[j].args, calls[j].kwargs)):
                out.append(_identical(behaviours[i].result, behaviours[j].result))
    return out


def _identical(a, b) -> bool:
    fa, fb = _flat(a), _flat(b)
    if len(fa) != len(fb):
        return False
    for x, y in zip(fa, fb):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.shape == y.shape
                    and np.array_equal(x, y, equal_nan=True)):
                return False
        elif x != y:
            return False
    return True


def _size(call) -> int:
    return sum(int(np.size(x)) for x in _flat((call.args, call.kwargs)) if isinstance(x, np.ndarray))


def _calls(data: dict) -> list:
    calls = [c for c in data.get("calls") or [] if c.result is not None or c.error is not None]
    if not calls:  # a check on native arrays or a property: the test's last call
        mine = [c for c in data.get("history") or [] if c.test == data.get("test")]
        calls = mine[-1:]
    calls = sorted(calls, key=lambda c: data.get("history", []).index(c) if c in data.get("history", []) else 0)
    return calls[-MAX_CALLS:]


def _minimal_matches(subject, calls) -> tuple[list, object]:
    """(the mutants that do on the minimal input what the implementation did, where the correct base does not;
    the call the implementation fails: the last one where it parts from the base)."""
    judged = subject.dtype
    seen = _seen_redrawn(subject, calls, [_observed(c) for c in calls])
    seen_repeats = _repeats(calls, seen)
    rounded = [_rounded(c, subject) for c in calls]  # the values a lower-precision implementation saw
    base = None
    matches = []
    for name, module in mutants(subject.backend == "torch"):
        dtype = _replay_dtype(module, judged)
        if dtype is None:
            continue
        inputs = calls if dtype == judged else rounded
        if name == "_base":
            replayed = [_replay(module, c, dtype, bool(s.redrawn)) for c, s in zip(inputs, seen)]
            base = (replayed, _repeats(calls, replayed), dtype)
            parted = [c for c, r, s in zip(calls, replayed, seen) if not _same(r, s, judged, dtype == judged)]
            failing = parted[-1] if parted else calls[-1]
            continue
        if base is None:
            return [], calls[-1]
        replayed = []
        for c, s in zip(inputs, seen):  # most mutants part from the implementation at the first call
            replayed.append(_replay(module, c, dtype, bool(s.redrawn)))
            if not _same(replayed[-1], s, judged, dtype == judged):
                break
        else:
            repeats = _repeats(calls, replayed)
            if repeats != seen_repeats:
                continue
            if repeats == base[1] and all(_same(r, b, judged, dtype == base[2]) for r, b in zip(replayed, base[0])):
                continue  # it does what the correct base does here: this is not the bug that shows
            matches.append((name, module))
    return matches, (failing if base is not None else calls[-1])


def _seen_redrawn(subject, calls, seen: list[Behaviour]) -> list[Behaviour]:
    """The implementation's behaviours, each call with a generator marked redrawn or not (REDRAWN): compared with
    an identical call of the test when there is one, else with the call made once more."""
    for n, (c, s) in enumerate(zip(calls, seen)):
        if not _draws(c) or s.error is not None:
            continue
        twin = next((o for m, o in enumerate(seen) if m != n and calls[m].fname == c.fname
                     and _identical((calls[m].args, calls[m].kwargs), (c.args, c.kwargs))), None)
        _redrawn(s, twin if twin is not None else _ask(subject, c), subject.dtype)
    return seen


GONE, RULED_OUT, SEVERAL = "gone", "ruled out", "several"  # why _the_one names no candidate
# (implementation's name, known bug's name) -> the claims whose failures named it, in this run
NAMED: dict[tuple[str, str], list[str]] = {}


def diagnose(data: dict):
    """The known bug that is the one (see the module docstring), else what the failure looks like."""
    subject = data.get("subject")
    calls = _calls(data)
    if subject is None or not calls or any(_size(c) > MAX_ELEMENTS for c in calls):
        return _looks_like(data, subject)
    candidates, failing = _minimal_matches(subject, calls)
    claims = [c for c in data.get("claims") or () if c]
    for name, module in candidates:  # one bug, one cause: a bug already named explains this failure too
        before = NAMED.get((subject.name, name))
        if before is None:
            continue
        if set(claims) <= set(before):
            return "this matches a known bug: " + module.BUG
        text = f"the known bug already named for {', '.join(before)} explains this failure too: {module.BUG}"
        before += [c for c in claims if c not in before]
        return text
    why, kept = "", []
    if candidates:
        kept, why = _the_one(subject, calls, failing, candidates)
        if not why:
            named = NAMED.setdefault((subject.name, kept[0][0]), [])
            named += [c for c in claims if c not in named]
            return "this matches a known bug: " + kept[0][1].BUG
    return _looks_like(data, subject, why, sorted(kept, key=lambda m: getattr(m[1], "CAUGHT_BY", "") not in claims))


WHY = {"": "no known bug matches it",
       GONE: "on this input it resembles a known bug, but on further inputs the failure does not show again, "
             "so no cause is named",
       RULED_OUT: "on this input it resembles a known bug, but further inputs rule it out, so no cause is named",
       SEVERAL: "more than one known bug explains it alike, even on further inputs, so none is named"}
MAX_LISTED = 4  # known bugs listed when several explain a failure alike


def _looks_like(data: dict, subject, why: str = "", alike=()):
    """("looks like", the failure in words, and why no known bug is named), or ("known bugs", why) when the
    failure is no comparison of values; None when there is nothing to say. Known bugs that behave alike on
    every input tried are listed as candidates (none of them is the cause, any could be)."""
    text = None
    if data.get("seen") is not None and data.get("expected") is not None:
        text = failure_shape.looks_like(data["expected"], data["seen"], getattr(subject, "dtype", "float64"),
                                        data["calls"][0].fname if data.get("calls") else "")
    reason = WHY[why] + ("; the candidates: " + "; ".join(
        f"({n}) {m.BUG} [{m.CAUGHT_BY}]" for n, (_, m) in enumerate(alike[:MAX_LISTED], 1)) if alike else "")
    if text:
        return "looks like", f"{text} ({reason})"
    return ("known bugs", reason) if why else None


# ------------------------------------------------------------------------ telling candidates apart


def _ask(subject, call) -> Behaviour:
    return (_on_subject_native if call.native else _on_subject)(subject, call)


def _asked(subject, probe, twice: bool) -> tuple:
    """(what the implementation did on a probe, and when asked `twice` whether the two results were
    bit-identical), inside torch.autocast when the test's call was; a probe with a generator is always
    asked twice, and its behaviour marked redrawn or not (REDRAWN)."""
    with _autocast("torch", probe.autocast):
        first = _ask(subject, probe)
        if not (twice or _draws(probe)):
            return first, None
        second = _ask(subject, probe)
        if _draws(probe):
            _redrawn(first, second, subject.dtype)
        return first, (_identical(first.result, second.result) if twice else None)


def _replayed(module, probe, dtype: str, twice: bool, again: bool = False) -> tuple:
    """A known bug's (behaviour, bit-identical when made twice); `again`: marked redrawn or not (REDRAWN)."""
    first = _replay(module, probe, dtype)
    if not (twice or again):
        return first, None
    second = _replay(module, probe, dtype)
    if again:
        _redrawn(first, second, dtype)
    return first, (_identical(first.result, second.result) if twice else None)


def _alike(a: tuple, b: tuple, judged: str, compare_dtype: bool) -> bool:
    """Two (behaviour, repeated bit-identically) of one probe agree; result dtypes compared when both are known."""
    known = a[0].dtype is not None and b[0].dtype is not None
    return a[1] == b[1] and _same(a[0], b[0], judged, compare_dtype and known)


def _the_one(subject, calls, failing, candidates: list) -> tuple:
    """(survivors, why): the candidates that also do what the implementation does on every further input
    (probes.py of the `failing` call), where on some of them the implementation fails again (differs from
    the correct base). why is "" for exactly one survivor (it is the one), else GONE, RULED_OUT or SEVERAL."""
    judged = subject.dtype
    twice = bool(_repeats(calls, [_observed(c) for c in calls]))  # the check compared repeated calls
    asked = probes.probes(failing, subject)
    seen = [_asked(subject, p, twice or p.native) for p in asked]
    rounded = [_rounded(p, subject) for p in asked]

    def behaves(module) -> bool:
        dtype = _replay_dtype(module, judged)
        inputs = asked if dtype == judged else rounded
        return all(_alike(_replayed(module, p, dtype, twice or p.native, bool(s[0].redrawn)), s, judged,
                          dtype == judged)
                   for p, s in zip(inputs, seen))

    if behaves(mutants(subject.backend == "torch")[0][1]):
        return [], GONE  # the failure does not show again: the minimal input alone cannot name a bug
    kept = _one_bug([(name, module) for name, module in candidates if behaves(module)], judged)
    return kept, ("" if len(kept) == 1 else SEVERAL if kept else RULED_OUT)


def _one_bug(kept: list, dtype: str) -> list:
    """Candidates that the catalogue records as one bug (SAME_BUG_AS: the same mistake in another backend or
    dtype) are one candidate: the one written for `dtype` where there is one."""
    roots = {getattr(module, "SAME_BUG_AS", name) for name, module in kept}
    if len(kept) < 2 or len(roots) > 1:
        return kept
    own = [(n, m) for n, m in kept if dtype in getattr(m, "DTYPES", NUMPY_DTYPES)]
    return (own or kept)[:1]


def _on_subject(subject, call) -> Behaviour:
    saved = list(subject.history)
    try:
        with subject.expecting_error(), np.errstate(all="ignore"):
            result = subject.call(call.fname, *call.args, **call.kwargs)
        return Behaviour(None, result, None, None)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - raising (or lacking a keyword) is a behaviour too
        return Behaviour(error=type(exc).__name__)
    finally:
        subject.history[:] = saved


def _on_subject_native(subject, call) -> Behaviour:
    """A probe with native arrays (call_native), observed as the test's own native call is: result, dtype, writes."""
    saved = list(subject.history)
    last = saved[-1] if saved else None
    try:
        with subject.expecting_error(), np.errstate(all="ignore"):
            subject.call_native(call.fname, *subject.native(call.args), **subject.native(call.kwargs))
        return _observed(subject.history[-1])
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001 - raising (or lacking a keyword) is a behaviour too
        made = subject.history[-1] if subject.history and subject.history[-1] is not last else None
        return Behaviour(error=(made.error if made is not None and made.error else type(exc).__name__))
    finally:
        subject.history[:] = saved


def _rounded(call, subject):
    """A low-precision call as the float32 replay sees it: the inputs rounded as the implementation saw them."""
    from copy import copy

    c = copy(call)
    c.args, c.kwargs = subject.round(call.args), subject.round(call.kwargs)
    return c


if diagnose not in feedback.DIAGNOSERS:
    feedback.DIAGNOSERS.append(diagnose)
