"""Known bugs, caught and named: does a failing implementation behave exactly like one of the mutants?

When a check fails, the calls it involved (or, for checks on native arrays, the test's last call)
are replayed on every mutant in impls/mutants/ and on their correct base, in the implementation's
dtype, on the same inputs. A mutant matches when, on every replayed call, it does what the
implementation did:

    same exception (or none);  same result within the relation tolerance of the dtype
    (NaN and inf in the same places);  same result dtype;  the same writes into its inputs;
    and, for two calls on identical inputs, bit-identical results or not, alike;

and the correct base does not (so the match is the bug, not agreement on what is right). The
feedback then names the mutant's BUG in plain words. An implementation that matches no mutant
gets only what failed. This diagnoser is in feedback.DIAGNOSERS, so it speaks in every failure
message, in a plain `pytest --impl` run as in grading.
"""

from __future__ import annotations

import contextlib
import importlib
import re
from functools import cache
from pathlib import Path

import numpy as np

from spec_tests.harness import arrays, feedback, tolerance

MUTANTS_DIR = Path(__file__).resolve().parents[2] / "impls" / "mutants"
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
    """What one call did: its error, result, result dtype and inputs afterwards (float64)."""

    def __init__(self, error=None, result=None, dtype=None, after=None):
        self.error, self.result, self.dtype, self.after = error, result, dtype, after


def _observed(call) -> Behaviour:
    return Behaviour(call.error, call.result, call.seen_dtype, call.after if call.native else None)


def _replay(module, call, dtype: str) -> Behaviour:
    fn = getattr(module, call.fname, None)
    if fn is None:
        return Behaviour(error="AttributeError")
    backend = getattr(module, "BACKEND", "numpy")
    cast = lambda a: arrays.to_native(a, backend, dtype)  # noqa: E731
    args, kwargs = arrays.map_arrays(call.args, cast), arrays.map_arrays(call.kwargs, cast)
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


def diagnose(data: dict) -> str | None:
    subject = data.get("subject")
    calls = _calls(data)
    if subject is None or not calls or any(_size(c) > MAX_ELEMENTS for c in calls):
        return None
    judged = subject.dtype
    seen = [_observed(c) for c in calls]
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
            replayed = [_replay(module, c, dtype) for c in inputs]
            base = (replayed, _repeats(calls, replayed), dtype)
            continue
        if base is None:
            return None
        replayed = []
        for c, s in zip(inputs, seen):  # most mutants part from the implementation at the first call
            replayed.append(_replay(module, c, dtype))
            if not _same(replayed[-1], s, judged, dtype == judged):
                break
        else:
            repeats = _repeats(calls, replayed)
            if repeats != seen_repeats:
                continue
            if repeats == base[1] and all(_same(r, b, judged, dtype == base[2]) for r, b in zip(replayed, base[0])):
                continue  # it does what the correct base does here: this is not the bug that shows
            matches.append(module)
    if not matches:
        return None
    claims = set(data.get("claims") or ())
    matches.sort(key=lambda m: getattr(m, "CAUGHT_BY", "") not in claims)
    if len(matches) > 1:  # the minimal input does not tell them apart: ask further inputs before naming one
        matches = _told_apart(subject, calls, matches)
    if len(matches) == 1:
        return "this matches a known bug: " + matches[0].BUG
    listed = "; ".join(f"({n}) {m.BUG} [{m.CAUGHT_BY}]" for n, m in enumerate(matches[:4], 1))
    return ("this input is explained by more than one known bug, and further inputs do not tell them apart; "
            "the candidates: " + listed)


# ------------------------------------------------------------------------ telling candidates apart
PROBE_SEED = 20240611


def _probes(call) -> list:
    """Further inputs for `call`'s function: for attention, shapes and masks that separate the mask and
    causal bugs (square and non-square causal, a dead row, a visible-key mask); otherwise fresh values of
    the same shapes. Deterministic."""
    from copy import copy

    rng = np.random.default_rng(PROBE_SEED)
    out = []

    def probe(args, kwargs):
        c = copy(call)
        c.args, c.kwargs, c.native, c.after = args, kwargs, False, None
        out.append(c)

    if call.fname in ("scaled_dot_product_attention", "attention_weights"):
        def qkv(L_q, L_k):
            q, k, v = rng.standard_normal((2, L_q, 3)), rng.standard_normal((2, L_k, 3)), rng.standard_normal((2, L_k, 2))
            return (q, k, v) if call.fname == "scaled_dot_product_attention" else (q, k)
        for L_q, L_k in ((4, 4), (3, 6), (6, 3)):
            probe(qkv(L_q, L_k), {"is_causal": True})
        visible = rng.random((2, 4, 5)) < 0.6
        visible[..., 0] = True
        probe(qkv(4, 5), {"mask": visible})
        dead = visible.copy()
        dead[0, 2] = False
        probe(qkv(4, 5), {"mask": dead})
        probe(qkv(3, 5), {})
        return out
    fresh = lambda a: rng.standard_normal(a.shape) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a  # noqa: E731
    for _ in range(2):
        probe(arrays.map_arrays(call.args, fresh), arrays.map_arrays(call.kwargs, fresh))
    return out


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


def _told_apart(subject, calls, candidates: list) -> list:
    """The candidates that also do what the implementation does on further inputs (all of them if none does)."""
    judged = subject.dtype
    probes = [p for c in calls[-1:] for p in _probes(c)]
    seen = [_on_subject(subject, p) for p in probes]
    rounded = [_rounded(p, subject) for p in probes]
    kept = []
    for module in candidates:
        dtype = _replay_dtype(module, judged)
        inputs = probes if dtype == judged else rounded
        if all(_same(_replay(module, p, dtype), s, judged, False) for p, s in zip(inputs, seen)):
            kept.append(module)
    return kept or candidates


def _rounded(call, subject):
    """A low-precision call as the float32 replay sees it: the inputs rounded as the implementation saw them."""
    from copy import copy

    c = copy(call)
    c.args, c.kwargs = subject.round(call.args), subject.round(call.kwargs)
    return c


if diagnose not in feedback.DIAGNOSERS:
    feedback.DIAGNOSERS.append(diagnose)
