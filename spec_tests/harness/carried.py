"""Error carried forward: one bug is charged once, to its own claim.

Two rules, applied only when a comparison with the float64 reference has already failed
(so a correct implementation never pays for them, and a passing run is unchanged):

1. A higher function built on a lower one. multi_head_attention is built on the
   implementation's own scaled_dot_product_attention (and split_heads, merge_heads). When that
   lower function fails its own claims, the higher claim is also met by matching the reference
   composition built on the implementation's lower function, as an exam marker carries an error
   forward: the bug costs the lower claim, not every claim above it. A correct lower function
   changes nothing: the higher claim is then judged against the reference alone.

       expected' = reference.multi_head.multi_head_attention_from(...,
                       scaled_dot_product_attention=the implementation's scaled_dot_product_attention)

   The reference composition takes its parts as arguments (nothing is patched): a function of the
   reference built on others names its twin in COMPOSITIONS; a test's own composite (a residual
   block) takes its parts as keyword arguments itself (check.carried_forward).

2. Precision. A float64 call with a lower-precision step anywhere inside it (the whole call cast down,
   `torch.tensor(...)`/`.float()`; or only the scores, the softmax, LayerNorm's statistics, RoPE's angles; in
   float32, float16 or bfloat16) errs far more than float64 allows and within that precision's rule
   (tolerance.precision_step). That is charged once, to PREC-3 (computing in the input's precision): when the
   implementation's attention, multi-head attention, LayerNorm or RoPE shows it on the fixed inputs below, every
   other claim is judged at the precision it reached (the least precise any of them reached), by that dtype's
   rule, and its feedback says so. An error beyond every rule is no precision step: it stays the failure of its
   own claim.

Whether a lower function fails its own claims is decided once per implementation and dtype, on a
few fixed inputs (deterministic, cheap), and those calls are kept out of the failure history.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from functools import partial

import numpy as np

import reference
import reference.attention_backward
import reference.multi_head
from spec_tests.harness import tolerance
from spec_tests.harness.arrays import map_arrays, round_trip
from spec_tests.harness.context import current
from spec_tests.harness.scope import OutOfScope, unrecorded
from spec_tests.harness.scope import recording_off as scope_unrecorded

PRECISION_CLAIM = "PREC-3"

# higher function -> (the reference function computing it from its lower functions, passed by keyword; those names)
COMPOSITIONS = {
    "multi_head_attention": (reference.multi_head.multi_head_attention_from,
                             ("scaled_dot_product_attention", "split_heads", "merge_heads")),
    "scaled_dot_product_attention_backward": (reference.attention_backward.scaled_dot_product_attention_backward_from,
                                              ("attention_weights",)),
}

# Notes for a test that passed only by a rule above: nodeid -> lines (the report's message for it).
NOTES: dict[str, list[str]] = {}


def note_for(nodeid: str) -> str:
    return "; ".join(NOTES.pop(nodeid, []))


def carried_here() -> bool:
    """Did a check of the running test pass by error carried forward from a lower function (rule 1)?"""
    return any("error carried forward" in line for line in NOTES.get(current().nodeid, []))


def _note(text: str) -> None:
    nodeid = current().nodeid
    lines = NOTES.setdefault(nodeid, [])
    if text not in lines:
        lines.append(text)


def note_carried(whose: str) -> None:
    """Record that the running test judged the implementation with `whose` (error carried forward)."""
    _note(f"judged with {whose} (error carried forward: that bug is charged to its own claim)")


# ------------------------------------------------------------------------------------- precision
def exact_in(a, dtype: str) -> bool:
    """Is every finite nonzero value of `a` exactly a `dtype` value (and is there something to tell by)?"""
    a = np.asarray(a, dtype=np.float64)
    finite = a[np.isfinite(a) & (a != 0)]  # zeros are exact in every dtype: nothing to tell by
    if finite.size == 0:
        return False
    with np.errstate(all="ignore"):
        return bool(np.array_equal(finite, round_trip(finite, dtype)))


def float32_exact(a) -> bool:
    """Is every finite value of `a` exactly a float32 (and is there something to tell by)?"""
    return exact_in(a, "float32")


def stored_in(subject, seen, expected) -> str | None:
    """The lower precision a float64 call's result was stored in: the least precise of tolerance.STEP_PRECISIONS
    in which every value seen is exact while the reference's values are not (None when there is none)."""
    if subject.dtype != "float64":
        return None
    for dtype in reversed(tolerance.STEP_PRECISIONS):
        if exact_in(seen, dtype) and not exact_in(expected, dtype):
            return dtype
    return None


def computed_in_float32(subject, seen, expected) -> bool:
    """A float64 call whose result holds only float32 values where the reference's does not."""
    return stored_in(subject, seen, expected) == "float32"


def _precision_judged(claims) -> bool:
    return PRECISION_CLAIM not in (claims or ())


# --------------------------------------------------------------------------- lower functions' verdict
# SDPA-5's input in the batteries: scores of several hundred (float64's exp overflows above 709, float32's above 88),
# where a softmax without its row's maximum, or with one maximum for every row, overflows or loses rows. Judged in
# float64 and float32 only: a float16 or bfloat16 score of that size is rounded to within a few units.
LARGE_SCORES = 400.0
STABILITY_CLAIM = "SDPA-5"


def _sharpened(weights: dict) -> dict:
    """W_Q scaled so that unit inputs give scores of several hundred (STABILITY_CLAIM's input at the multi-head level)."""
    return {**weights, "w_q": LARGE_SCORES * weights["w_q"]}


def _battery(fname: str):
    """(claim, args, kwargs) on which a lower function is checked against the reference."""
    rng = np.random.default_rng(20240611)
    n = rng.standard_normal
    if fname == "scaled_dot_product_attention":
        q, k, v = n((2, 3, 4)), n((2, 5, 4)), n((2, 5, 3))
        visible = rng.random((2, 3, 5)) < 0.6
        visible[..., 0] = True
        dead = visible.copy()
        dead[1, 1] = False
        sq, sk = n((2, 4, 4)), n((2, 4, 4))
        # MASK-5's: a key-padding mask broadcast over the queries, a mask with is_causal (their AND), and masks with
        # a head axis (per head, and padding) on (B, H, L, d) inputs; each row keeps a key (the diagonal, key 0)
        pad = rng.random((2, 1, 5)) < 0.6
        pad[..., 0] = True
        with_causal = (rng.random((2, 4, 4)) < 0.6) | np.eye(4, dtype=bool)
        q4, k4, v4 = n((2, 2, 3, 4)), n((2, 2, 5, 4)), n((2, 2, 5, 3))
        per_head = rng.random((2, 2, 3, 5)) < 0.6
        per_head[..., 0] = True
        return [("SDPA-1", (q, k, v), {}),
                ("SDPA-5", (LARGE_SCORES * q, k, v), {}),
                ("MASK-1", (q, k, v), {"mask": visible}),
                ("MASK-2", (sq, sk, sk), {"is_causal": True}),
                ("MASK-3", (q[:, :2], k, v), {"is_causal": True}),
                ("MASK-4", (q, k, v), {"mask": dead}),
                ("MASK-5", (q, k, v), {"mask": pad}),
                ("MASK-5", (sq, sk, sk), {"mask": with_causal, "is_causal": True}),
                ("MASK-5", (q4, k4, v4), {"mask": per_head}),
                ("MASK-5", (q4, k4, v4), {"mask": pad[:, None]})]
    if fname == "attention_weights":  # the weights of SDPA-1's input, and of masked inputs like attention's above
        q, k = n((2, 3, 4)), n((2, 5, 4))
        visible = rng.random((2, 3, 5)) < 0.6
        visible[..., 0] = True
        pad = rng.random((2, 1, 5)) < 0.6
        pad[..., 0] = True
        q4, k4 = n((2, 2, 3, 4)), n((2, 2, 5, 4))
        dead = visible.copy()
        dead[1, 1] = False
        return [("SDPA-1", (q, k), {}),
                ("SDPA-5", (LARGE_SCORES * q, k), {}),
                ("MASK-1", (q, k), {"mask": visible}),
                ("MASK-4", (q, k), {"mask": dead}),
                ("MASK-5", (q, k), {"mask": pad}),
                ("MASK-5", (q4, k4), {"mask": pad[:, None]})]
    if fname == "layer_norm":
        return [("LN-1", (n((3, 8)) * 2.0 + 1.0, 1.0 + 0.5 * n(8), 0.5 * n(8)), {})]
    if fname == "multi_head_attention":
        from spec_tests.harness.strategies import mha_weights

        x, kv = n((2, 3, 4)), n((2, 5, 4))
        x8, kv8 = n((2, 6, 8)), n((2, 9, 8))
        # with biases, and without (a module whose projections have none declares biases out of its scope); causal
        # self-attention, whose masking is the masks chapter's (a block built on it carries that bug forward); a
        # padding mask that differs between the batch's sequences, and a mask per head (MASK-5 at the multi-head level)
        pad = rng.random((2, 1, 1, 6)) < 0.6
        pad[..., 0], pad[0, ..., 1:] = True, True
        per_head = rng.random((2, 2, 6, 6)) < 0.6
        per_head[..., 0] = True
        return [("MHA-5", (x, kv, kv, mha_weights(7, 4, True), 2), {}),
                ("MHA-5", (x8, kv8, kv8, mha_weights(9, 8, False), 2), {}),
                ("SDPA-5", (x8, kv8, kv8, _sharpened(mha_weights(9, 8, False)), 2), {}),
                ("MASK-2", (x8, x8, x8, mha_weights(9, 8, False), 2), {"is_causal": True}),
                ("MASK-5", (x8, x8, x8, mha_weights(9, 8, False), 2), {"mask": pad}),
                ("MASK-5", (x8, x8, x8, mha_weights(9, 8, False), 2), {"mask": per_head})]
    if fname == "rotary_embedding":  # near positions: float64's allowance grows with the largest angle
        return [("PE-4", (n((2, 6, 8)), np.arange(6)), {})]
    if fname == "split_heads":
        return [("MHA-3", (n((2, 3, 6)), 3), {})]
    if fname == "merge_heads":
        return [("MHA-3", (n((2, 3, 4, 2)),), {})]
    return []


@contextlib.contextmanager
def off_the_record(subject):
    """Calls made here leave the subject's history (what a failure reports and diagnoses) as it was, and an input
    the implementation declares out of its scope raises OutOfScope here without rejecting the test's example."""
    saved = list(subject.history)
    try:
        with unrecorded():
            yield
    finally:
        subject.history[:] = saved


@dataclass(frozen=True)
class Evidence:
    """One call of a lower function against the reference: its verdict (None: it matches at the subject's
    precision; "float32", "float16" or "bfloat16": a float64 call at that precision, PREC-3's bug; "failed": any
    other error)."""
    verdict: str | None
    seen: np.ndarray | None = None
    expected: np.ndarray | None = None
    bound: tolerance.Bound | None = None  # at the subject's dtype
    allowed_there: float = 0.0  # the rule of the precision reached (verdict), on this input
    terms: float = 0.0
    err: float = 0.0
    call: object = None  # the call (subject.Call) it was seen on

    @property
    def step(self) -> str | None:
        """The lower precision this call reached (PREC-3's bug), or None."""
        return self.verdict if self.verdict in tolerance.STEP_PRECISIONS else None


def precision_evidence(subject, fname, args, kwargs) -> Evidence:
    """fname(*args, **kwargs) of the subject against the reference, and what its error shows."""
    seen = subject.call(fname, *args, **kwargs)
    call = subject.history[-1] if subject.history else None
    r_args, r_kwargs = subject.round(args), subject.round(kwargs)
    oracle_fn = getattr(reference, fname)
    expected = oracle_fn(*r_args, **r_kwargs)
    seen, expected = np.asarray(seen, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if seen.shape != expected.shape or not np.array_equal(np.isfinite(seen), np.isfinite(expected)):
        return Evidence("failed", seen, expected, call=call)
    err = float(np.nan_to_num(np.abs(seen - expected)).max()) if seen.size else 0.0
    bound = tolerance.bound_against(subject.dtype, oracle_fn, r_args, r_kwargs, expected, fname)
    if err <= bound.allowed:
        return Evidence(None, seen, expected, bound, err=err, call=call)
    if subject.dtype != "float64":
        return Evidence("failed", seen, expected, bound, err=err, call=call)
    allowed: dict[str, float] = {}

    def allowed_at(dtype: str) -> float:  # each lower rule computed only when asked (an emulated yardstick)
        if dtype not in allowed:
            allowed[dtype] = tolerance.bound_against(dtype, oracle_fn, r_args, r_kwargs, expected, fname).allowed
        return allowed[dtype]

    terms = tolerance.terms_size(fname, r_args, r_kwargs, expected)
    step = tolerance.precision_step(err, bound.allowed, allowed_at, terms)
    if step in HALF_PRECISIONS and not _error_is_rounding(subject, fname, args, kwargs, seen - expected, step):
        step = None  # an error of half precision's size that moves smoothly with the input: a formula's bug
    stored = stored_in(subject, seen, expected)
    if step is None and stored is not None and err <= allowed_at(stored):  # cast back from a lower dtype
        step = stored
    if step is None:
        return Evidence("failed", seen, expected, bound, err=err, call=call)
    return Evidence(step, seen, expected, bound, allowed_at(step), terms, err, call)


HALF_PRECISIONS = ("float16", "bfloat16")
NUDGE_ULPS = 8  # the inputs are moved by up to this many ulp of the precision in question, each its own way


def _error_is_rounding(subject, fname, args, kwargs, error, dtype: str) -> bool:
    """Is an error of `dtype`'s size (float16, bfloat16) the noise of rounding to `dtype`, not a formula's bug?

    Rounding's error is noise: move every input by a few ulp of `dtype` (NUDGE_ULPS, each value its own way) and
    the values rounded inside land elsewhere in their ulp, so the new error is unrelated to the old; the two
    differ by about as much as either is large. A formula's error (a wrong scale or epsilon, say) is a smooth
    function of the input: it moves by about NUDGE_ULPS ulp of itself. Half of the larger error tells them apart."""
    rng = np.random.default_rng(20240612)
    nudge = NUDGE_ULPS * tolerance.EPS[dtype]

    def moved(a):
        a = np.asarray(a)
        return a * (1.0 + nudge * rng.uniform(-1.0, 1.0, a.shape)) if a.dtype.kind == "f" else a

    args2, kwargs2 = map_arrays(args, moved), map_arrays(kwargs, moved)
    with off_the_record(subject):
        seen = np.asarray(subject.call(fname, *args2, **kwargs2), dtype=np.float64)
    expected = np.asarray(getattr(reference, fname)(*subject.round(args2), **subject.round(kwargs2)), dtype=np.float64)
    if seen.shape != np.shape(error):
        return False
    first, second = (np.nan_to_num(e, nan=0.0, posinf=0.0, neginf=0.0) for e in (error, seen - expected))
    larger = max(float(np.abs(first).max(initial=0.0)), float(np.abs(second).max(initial=0.0)))
    return larger > 0 and float(np.abs(second - first).max()) >= 0.5 * larger


def _fails(subject, fname, args, kwargs) -> str | None:
    """None if fname matches the reference on these inputs; else "failed" or the lower precision it reached."""
    return precision_evidence(subject, fname, args, kwargs).verdict


def precision_reached(subject, fname: str, args, kwargs) -> str | None:
    """None when fname matches the reference at the subject's precision; "float32", "float16" or "bfloat16" when
    a float64 call errs as a step at that precision inside it would (PREC-3's bug); "failed" for any other error."""
    return _fails(subject, fname, args, kwargs)


def step_evidence(subject, fname: str) -> Evidence | None:
    """The first fixed input (lower_verdict's) on which fname of this float64 subject shows a lower-precision
    step, or None: what PREC-3 charges when the other claims judge the subject at that precision (judged_dtype).
    Inputs the implementation declares out of its scope are passed over."""
    if subject.dtype != "float64" or not subject.has(fname):
        return None
    with off_the_record(subject):
        for claim, args, kwargs in _battery(fname):
            if claim == STABILITY_CLAIM:  # an overflow there is SDPA-5's, not a lower precision's
                continue
            try:
                evidence = precision_evidence(subject, fname, args, kwargs)
            except Exception:  # noqa: BLE001 - raising is another claim's failure; out of scope, no evidence
                continue
            if evidence.step:
                return evidence
    return None


float32_evidence = step_evidence  # its name when only float32 steps were found


def _cuts(fname, args):
    """Smaller inputs cut from a fixed input (no keywords), one batch entry and one query row each (one row of
    LayerNorm, one position of RoPE): each is still that function's valid input."""
    a = [np.asarray(x) if isinstance(x, np.ndarray) else x for x in args]
    if fname == "layer_norm":
        return [(a[0][i:i + 1], *a[1:]) for i in range(a[0].shape[0])]
    batch = range(a[0].shape[0]) if a[0].ndim >= 3 else [None]
    rows = range(a[0].shape[-2])
    pick = lambda x, b: x if b is None else x[b:b + 1]  # noqa: E731
    if fname == "scaled_dot_product_attention":
        return [(pick(a[0], b)[..., i:i + 1, :], pick(a[1], b), pick(a[2], b)) for b in batch for i in rows]
    if fname == "multi_head_attention":
        return [(pick(a[0], b)[..., i:i + 1, :], pick(a[1], b), pick(a[2], b), *a[3:]) for b in batch for i in rows]
    if fname == "rotary_embedding":
        return [(pick(a[0], b)[..., i:i + 1, :], a[1][..., i:i + 1]) for b in batch for i in rows]
    return []


def smallest_step(subject, fname: str, evidence: Evidence) -> Evidence:
    """The evidence of a step found on a fixed input, on the smallest cut of that input (_cuts) that still shows
    it: what PREC-3's message shows a learner (the values of a one-row input can be read); `evidence` itself
    when no cut shows it, or it came with keywords."""
    call = evidence.call
    if call is None or call.kwargs or not evidence.step:
        return evidence
    with off_the_record(subject):
        for args in _cuts(fname, call.args):
            try:
                smaller = precision_evidence(subject, fname, args, {})
            except Exception:  # noqa: BLE001 - a cut it cannot take shows nothing
                continue
            if smaller.step:
                return smaller
    return evidence


_VERDICTS: dict[tuple, tuple] = {}
_REACHED: dict[tuple, str] = {}  # (impl, dtype, fname) -> the lower precision its fixed inputs showed


def _coarsest(dtypes) -> str | None:
    """The least precise of `dtypes` (tolerance.STEP_PRECISIONS), None when there is none."""
    found = [d for d in tolerance.STEP_PRECISIONS if d in dtypes]
    return found[-1] if found else None


def lower_verdict(subject, fname: str) -> tuple[str, ...]:
    """The claims `fname` of this implementation fails on the fixed inputs ((), when it holds them all). An input
    it declares out of its scope decides nothing: it is neither a failure nor a pass."""
    key = (id(subject.impl), subject.dtype, fname)
    if key in _VERDICTS:
        return _VERDICTS[key]
    failed: list[str] = []
    steps: list[str] = []
    with off_the_record(subject):
        for claim, args, kwargs in _battery(fname):
            if claim == STABILITY_CLAIM and subject.dtype not in ("float64", "float32"):
                continue
            try:
                outcome = _fails(subject, fname, args, kwargs)
            except OutOfScope:  # declared out of its scope: this input tells nothing
                continue
            except Exception as exc:  # noqa: BLE001 - raising on valid input is failing the claim
                outcome = "failed"
                raised = exc.__cause__ if exc.__cause__ is not None else exc  # the feedback's SpecFailure wraps it
                _RAISES.setdefault(key, {}).setdefault(type(raised).__name__, []).append(claim)
            except BaseException as exc:  # not implemented / not applicable: nothing to carry forward
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                failed, steps = [], []
                break
            if outcome in tolerance.STEP_PRECISIONS and claim == STABILITY_CLAIM:
                continue  # at scores of several hundred any formula's error fits a coarse precision's rule: no evidence
            if outcome in tolerance.STEP_PRECISIONS:
                steps.append(outcome)
                if PRECISION_CLAIM not in failed:
                    failed.append(PRECISION_CLAIM)
            elif outcome == "failed" and claim not in failed:
                failed.append(claim)
    _VERDICTS[key] = tuple(failed)
    if _coarsest(steps):
        _REACHED[key] = _coarsest(steps)
    return _VERDICTS[key]


# (implementation, dtype, function) -> {exception type name: the claims whose fixed inputs raised it}
_RAISES: dict[tuple, dict[str, list[str]]] = {}
# a function -> the lower function whose exception on valid input it may pass on (rule 1, for exceptions)
RAISES_THROUGH = {"scaled_dot_product_attention": "scaled_dot_product_attention",
                  "multi_head_attention": "scaled_dot_product_attention",
                  "paged_attention": "scaled_dot_product_attention",
                  "attention_weights": "attention_weights"}


def raised_by_its_lower_function(subject, fname: str, exc: BaseException) -> str | None:
    """fname raised `exc` on valid input: when the implementation's lower function (attention itself, for its
    later keywords) holds its plain fixed input but raises the same kind of exception on the fixed inputs of claims
    it fails (a mask shape, say), and the running test is not one of those claims, the reason it is not judged here
    (error carried forward: the exception is charged to those claims); else None. A lower function that fails its
    plain input (raising on everything, say) leaves nothing to carry: the test fails as it would."""
    lower = RAISES_THROUGH.get(fname)
    if lower is None or not subject.has(lower) or scope_unrecorded():
        return None
    failed = lower_verdict(subject, lower)
    claims = _RAISES.get((id(subject.impl), subject.dtype, lower), {}).get(type(exc).__name__, [])
    plain = _battery(lower)[0][0]  # its first fixed input has no keyword: a function failing it carries nothing
    if not claims or plain in failed or set(current().claims) & set(failed):
        return None
    named = ", ".join(dict.fromkeys(claims))
    return (f"error carried forward: your {lower} raises {type(exc).__name__} on valid input of {named} too (the "
            f"suite's fixed inputs), which is charged there; this {fname} call raised {type(exc).__name__}: {exc}")


def reached(subject, fname: str) -> str | None:
    """The lower precision fname of this float64 subject reached on the fixed inputs (PREC-3's bug), or None."""
    lower_verdict(subject, fname)
    return _REACHED.get((id(subject.impl), subject.dtype, fname))


def _failing_parts(subject, names) -> dict[str, tuple[str, ...]]:
    """The lower functions among `names` this implementation has that fail their own claims -> those claims."""
    failing = {name: lower_verdict(subject, name) for name in names if subject.has(name)}
    return {name: ids for name, ids in failing.items() if ids}


def _built_on(subject, composite, r_args, r_kwargs, parts):
    """composite(*r_args, **r_kwargs) with each of `parts` (names of lower functions) the implementation's own,
    passed by keyword; those calls are kept out of the failure history."""
    own = {name: partial(subject.call, name) for name in parts}
    with off_the_record(subject):
        return composite(*r_args, **r_kwargs, **own)


def _whose(subject, failing: dict) -> str:
    """"your scaled_dot_product_attention, which fails SDPA-1", tracing a higher function to the lower one at fault."""
    parts = []
    for name, ids in failing.items():
        below = _failing_parts(subject, COMPOSITIONS[name][1]) if name in COMPOSITIONS else {}
        if below:
            inner = "; ".join(f"your {n}, which fails {', '.join(i)}" for n, i in below.items())
            parts.append(f"your {name} (built on {inner})")
        else:
            parts.append(f"your {name}, which fails {', '.join(ids)}")
    return ", ".join(parts)


def judge_composite(subject, oracle_fn, r_args, r_kwargs, carry, failure, compare) -> None:
    """Called by check.carried_forward when a result failed against the reference composite (`failure`): judged
    again against the reference composition built on the implementation's own lower functions named in `carry`,
    those of them that fail their own claims; raises `failure` when none does or the result misses that too.

    oracle_fn: a function of the reference with a twin in COMPOSITIONS, or a composite that takes the functions
    named in `carry` as keyword arguments; compare(expected, what): the result against `expected`."""
    from spec_tests.harness.feedback import SpecFailure

    failing = _failing_parts(subject, carry)
    if not failing:
        raise failure
    composite = COMPOSITIONS.get(oracle_fn.__name__, (oracle_fn,))[0]
    try:
        expected = _built_on(subject, composite, r_args, r_kwargs, failing)
    except Exception:  # noqa: BLE001 - a lower function raised: nothing to carry
        raise failure from None
    whose = _whose(subject, failing)
    with contextlib.suppress(SpecFailure):
        compare(expected, f"against the reference built on {whose}")
        note_carried(whose)
        return
    raise failure


def own_or_reference(subject, fname: str):
    """The implementation's `fname` for a claim that uses it only as a vehicle (RES-3 pushes activations through
    multi-head attention to judge an initialisation): the reference's, with a note, when the implementation's fails
    its own claims on the fixed inputs (that bug is charged to them, not again to the vehicle's claim)."""
    failing = _failing_parts(subject, (fname,))
    if not failing:
        return partial(subject.call, fname)
    _note(f"judged with the reference's {fname} (error carried forward: {_whose(subject, failing)}, "
          f"which is charged to that claim)")
    return getattr(reference, fname)


PRECISION_FUNCTIONS = ("scaled_dot_product_attention", "multi_head_attention", "layer_norm", "rotary_embedding")


def judged_dtype(subject) -> str:
    """The precision a claim judges this subject at: for a float64 subject whose attention, multi-head attention,
    LayerNorm or RoPE shows a lower-precision step on the fixed inputs (PREC-3 pays for that, once), the least
    precise such step reached; its own dtype otherwise (and always under PREC-3)."""
    if subject.dtype != "float64" or not _precision_judged(current().claims):
        return subject.dtype
    steps = []
    for fname in PRECISION_FUNCTIONS:
        try:
            if subject.has(fname):
                steps.append(reached(subject, fname))
        except Exception:  # noqa: BLE001 - no verdict: judge at the subject's own dtype
            continue
    return _coarsest(steps) or subject.dtype


def _note_precision(dtype: str) -> None:
    _note(f"judged at {dtype} precision: this implementation computes float64 input at {dtype}'s precision, "
          f"which is charged once, to {PRECISION_CLAIM}")


def judge_precision(subject, failure, compare) -> None:
    """Called by check.against when a result failed against the reference: judged again by the rule of the
    precision reached, compare(dtype), when the implementation computes float64 input at a lower precision
    (charged to PREC-3)."""
    from spec_tests.harness.feedback import SpecFailure

    dtype = judged_dtype(subject)
    if dtype != subject.dtype:
        with contextlib.suppress(SpecFailure):
            compare(dtype)
            _note_precision(dtype)
            return
    raise failure


def judge_relation(subject, scale, failure, compare) -> None:
    """Called by check.close when a relation failed in float64: judged again at the precision reached when the
    implementation computes float64 input at a lower precision (charged to PREC-3); raises `failure` otherwise."""
    from spec_tests.harness.feedback import SpecFailure

    dtype = judged_dtype(subject)
    if dtype != subject.dtype:
        with contextlib.suppress(SpecFailure):
            compare(tolerance.relation_bound(dtype, scale))
            _note_precision(dtype)
            return
    raise failure


# ----------------------------------------------------------------------------- a function's own unmasked calls
# A masked (or causal) call equals, row by row, the same function's plain call on the keys that row sees: for
# attention out_i = attention(q_i, K[vis_i], V[vis_i]) (0 for a row that sees none), for multi-head attention the
# same over query tokens when every head sees the same keys; the keys a row sees are the AND of the mask, causal,
# the window and the documents (reference.mask_algebra.visible_keys). A paged cache read through its block table is,
# sequence by sequence, attention over the contiguous tokens the reference gathers. When a function fails its own
# formula's claim (OWN_CLAIM, on the fixed inputs), the chapters about which keys a query sees (ROW_CHAPTERS) judge
# its masked calls against that composition: the formula's bug is charged to the formula's claim, and a masking bug
# still shows (ROW_CHAPTERS only: elsewhere an implementation consistent with its own wrong formula, all zeros say,
# is no evidence of anything).
ROW_CHAPTERS = ("masks", "variable_length", "mask_algebra", "efficient", "log_sum_exp")  # the chapters judged so
OWN_CLAIM = {"scaled_dot_product_attention": ("scaled_dot_product_attention", "SDPA-1"),
             "attention_weights": ("scaled_dot_product_attention", "SDPA-1"),
             "multi_head_attention": ("multi_head_attention", "MHA-5"),
             "paged_attention": ("scaled_dot_product_attention", "SDPA-1")}
ROW_KEYWORDS = ("mask", "is_causal", "scale", "num_kv_heads", "window_size", "q_segment_ids", "kv_segment_ids",
                "bias", "softcap", "sinks", "return_lse")  # a bias is passed on, cut to the row and its keys (its
# bugs are PE-5's); a cap acts on each score alone and a head's sink joins each of its rows: both are passed on as given
PLAIN_KEYWORDS = ("scale", "num_kv_heads", "softcap", "return_lse")  # passed to each row's call as they are


def _visible(fname, args, kwargs):
    """(lead shape, visible keys (lead + (L_q, L_k)) bool) of an attention call; for multi-head attention, ((B,),
    (B, H, L_q, L_k))."""
    from reference.mask_algebra import visible_keys

    f = lambda x: np.asarray(x)  # noqa: E731
    L_q, L_k = f(args[0]).shape[-2], f(args[1]).shape[-2]
    allowed = np.asarray(visible_keys(kwargs.get("mask"), bool(kwargs.get("is_causal", False)), L_q, L_k,
                                      kwargs.get("window_size"), kwargs.get("q_segment_ids"),
                                      kwargs.get("kv_segment_ids")), dtype=bool)
    if kwargs.get("bias") is not None:  # a -inf bias hides its key as mask=False does (the contract)
        allowed = allowed & (np.asarray(kwargs["bias"], dtype=np.float64) != -np.inf)
    if fname == "multi_head_attention":
        shape = np.broadcast_shapes((f(args[0]).shape[0], int(args[4])), allowed.shape[:-2]) + (L_q, L_k)
    else:
        leads = [f(a).shape[:-2] for a in args[:3 if fname == "scaled_dot_product_attention" else 2]]
        if kwargs.get("bias") is not None:
            leads.append(f(kwargs["bias"]).shape[:-2])
        shape = np.broadcast_shapes(*leads, allowed.shape[:-2]) + (L_q, L_k)
    visible = np.broadcast_to(allowed, shape)
    if fname == "multi_head_attention":  # (B, H, L_q, L_k): whether heads differ is row_by_row's to decide
        return visible.shape[:1], visible
    return visible.shape[:-2], visible


def _row(subject, fname, args, kwargs, lead, index, i, keys):
    """Row i (at leading index `index` of the call's leading dims `lead`) of fname's plain call on the keys
    `keys` that row sees: the call keeps every leading dim, each of size 1; (output row, its lse) with return_lse."""
    plain = {k: kwargs[k] for k in PLAIN_KEYWORDS if kwargs.get(k) is not None and k in kwargs}
    if fname == "multi_head_attention":
        b = index[0]
        query, key, value = (np.asarray(a)[b:b + 1] for a in args[:3])
        return np.asarray(subject.call(fname, query[:, i:i + 1], key[:, keys], value[:, keys], *args[3:5],
                                       **plain), dtype=np.float64)[0, 0]
    at = tuple(slice(j, j + 1) for j in index)  # this leading index, each dim kept (size 1)
    n = 3 if fname == "scaled_dot_product_attention" else 2
    q, k, *v = (np.broadcast_to(np.asarray(a), lead + np.shape(a)[-2:])[at] for a in args[:n])
    if kwargs.get("bias") is not None:  # an additive bias goes with the scores it is added to: its row, those keys
        L_q, L_k = q.shape[-2], k.shape[-2]
        plain["bias"] = np.broadcast_to(np.asarray(kwargs["bias"]), lead + (L_q, L_k))[at][..., i:i + 1, keys]
    if kwargs.get("sinks") is not None:  # this row's head's sink, as (1,) * len(lead)
        plain["sinks"] = np.broadcast_to(np.asarray(kwargs["sinks"]), lead)[at]
    q, k = q[..., i:i + 1, :], k[..., keys, :]
    flat = lambda x: np.asarray(x, dtype=np.float64).reshape(np.shape(x)[-1:] if np.ndim(x) else ())  # noqa: E731
    if fname == "attention_weights":
        row = np.zeros(k.shape[:-2] + (1, np.shape(args[1])[-2]))
        row[..., keys] = np.asarray(subject.call(fname, q, k, **plain), dtype=np.float64)
        return flat(row)
    got = subject.call(fname, q, k, v[0][..., keys, :], **plain)
    if isinstance(got, tuple):  # return_lse: (output (..., 1, d_v), lse (..., 1))
        return flat(got[0]), float(np.asarray(got[1], dtype=np.float64).reshape(-1)[0])
    return flat(got)


def row_by_row(subject, fname, args, kwargs, dead_lse=None):
    """fname(*args, **kwargs) built from the implementation's own plain calls, one query row at a time on the keys
    it sees (see above); None where that does not apply (other keywords, heads that see different keys, a dead
    row of multi-head attention). With return_lse, (output, lse); a dead row's lse is taken from `dead_lse` (the
    reference's, (..., L_q)), as a row that sees no key has no plain call. Calls made here are kept out of the
    failure history."""
    if fname not in OWN_CLAIM or not set(kwargs) <= set(ROW_KEYWORDS):
        return None
    if fname == "paged_attention":
        return _paged_by_rows(subject, args, kwargs)
    with_lse = bool(kwargs.get("return_lse"))
    if with_lse and (fname != "scaled_dot_product_attention" or dead_lse is None):
        return None
    found = _visible(fname, args, kwargs)
    if found is None:
        return None
    lead, visible = found
    if fname == "multi_head_attention":
        if not (visible == visible[:, :1]).all() or not visible.any(axis=-1).all():
            return _mha_by_heads(subject, args, kwargs, visible)
        visible = visible[:, 0]
    L_q, L_k = visible.shape[-2:]
    width = {"attention_weights": L_k, "scaled_dot_product_attention": np.shape(args[2])[-1] if len(args) > 2 else 0,
             "multi_head_attention": np.shape(args[3]["w_o"])[-1] if len(args) > 3 else 0}[fname]
    out = np.zeros(visible.shape[:-1] + (width,))
    lse = np.array(np.broadcast_to(np.asarray(dead_lse, dtype=np.float64), visible.shape[:-1])) if with_lse else None
    with off_the_record(subject):
        for index in np.ndindex(*lead):
            for i in range(L_q):
                keys = np.flatnonzero(visible[index + (i,)])
                if keys.size:
                    got = _row(subject, fname, args, kwargs, lead, index, i, keys)
                    if with_lse:
                        out[index + (i,)], lse[index + (i,)] = got
                    else:
                        out[index + (i,)] = got
    return (out, lse) if with_lse else out


def _mha_by_heads(subject, args, kwargs, visible):
    """multi_head_attention with heads that see different keys (visible: (B, H, L_q, L_k)), built from the
    implementation's own plain calls: the output is b_O + sum over heads h of head_h W_O[rows of h], so head h's
    share of query row i is its plain call on the keys head h sees, with W_O's rows of the other heads (and b_O)
    set to 0; a head that sees no key adds 0 (a dead row's output)."""
    plain = {k: kwargs[k] for k in PLAIN_KEYWORDS if kwargs.get(k) is not None and k in kwargs}
    weights, H = args[3], int(args[4])
    w_o = np.asarray(weights["w_o"], dtype=np.float64)
    if w_o.shape[0] % H:
        return None
    width = w_o.shape[0] // H
    only = []  # weights whose output projection keeps head h's rows alone
    for h in range(H):
        w = dict(weights)
        w["w_o"] = np.zeros_like(w_o)
        w["w_o"][h * width:(h + 1) * width] = w_o[h * width:(h + 1) * width]
        if weights.get("b_o") is not None:
            w["b_o"] = np.zeros_like(np.asarray(weights["b_o"], dtype=np.float64))
        only.append(w)
    B, _, L_q, _ = visible.shape
    b_o = 0.0 if weights.get("b_o") is None else np.asarray(weights["b_o"], dtype=np.float64)
    out = np.zeros((B, L_q, w_o.shape[-1])) + b_o
    query, key, value = (np.asarray(a) for a in args[:3])
    with off_the_record(subject):
        for b, h, i in np.ndindex(B, H, L_q):
            keys = np.flatnonzero(visible[b, h, i])
            if keys.size:
                out[b, i] += np.asarray(subject.call("multi_head_attention", query[b:b + 1, i:i + 1],
                                                     key[b:b + 1, keys], value[b:b + 1, keys], only[h], H, **plain),
                                        dtype=np.float64)[0, 0]
    return out


def _paged_by_rows(subject, args, kwargs):
    """paged_attention(q, k_cache, v_cache, block_table, seq_lens, ...) as the implementation's own plain attention,
    row by row, over each sequence's tokens gathered by the reference (reference.paged_cache.gather); 0 for a
    sequence with nothing cached."""
    from reference.grouped_query import repeat_kv_heads
    from reference.paged_cache import gather

    q, k_cache, v_cache, table, lens = (np.asarray(a) for a in args[:5])
    keys = {k: kwargs[k] for k in ("is_causal", "scale") if k in kwargs}
    out = np.zeros(q.shape[:-1] + (v_cache.shape[-1],))
    for b, n in enumerate(int(x) for x in lens):
        if n:
            H = q.shape[1]
            k, v = (repeat_kv_heads(gather(c, table[b], n), H) for c in (k_cache, v_cache))
            out[b] = row_by_row(subject, "scaled_dot_product_attention", (q[b], k, v), keys)
    return out


def _judge_row_by_row(subject, fname, args, kwargs, s, bound_of, compare) -> bool:
    """Error carried forward from a function's own formula (OWN_CLAIM) to its masked calls: True when `s` matches
    the implementation's own plain calls, row by row, and the function fails its formula's claim."""
    from spec_tests.harness.claims import get as claim_of
    from spec_tests.harness.feedback import SpecFailure

    if fname not in OWN_CLAIM:
        return False
    base, own = OWN_CLAIM[fname]
    chapter = claim_of(own).chapter
    claims = current().claims or ()
    if not claims or any(claim_of(c).chapter in (chapter,) or claim_of(c).chapter not in ROW_CHAPTERS
                         for c in claims) or not subject.has(base) \
            or own not in lower_verdict(subject, base):
        return False
    try:
        built = row_by_row(subject, fname, args, kwargs)
    except Exception:  # noqa: BLE001 - a plain call raised: nothing to carry
        return False
    if built is None:
        return False
    whose = f"your {fname}'s own calls without the mask, one query row at a time on the keys it sees " \
            f"(your {base} fails {own}, which is charged to that claim)"
    with contextlib.suppress(SpecFailure):
        compare(s, built, bound_of(built), f"{fname}(...) against {whose}")
        _note(f"judged against {whose}")
        return True
    return False


# --------------------------------------------------------------------------- a result of the wrong shape
# A function whose result has the wrong shape (multi-head attention returning its heads unmerged, (B, H, L, d_k)) fails
# its own chapter's claims, which say so. A claim of another chapter that calls it (a padded batch, a residual block, a
# mask on multi-head attention) cannot judge anything on that result: it is not applicable there, with the reason.
SHAPE_OWNERS = {"multi_head_attention": "multi_head"}  # a function -> the chapter whose claims judge its shape


def _expected_shape(fname, args) -> tuple[int, ...] | None:
    if fname == "multi_head_attention" and len(args) > 3 and isinstance(args[3], dict) and "w_o" in args[3]:
        return tuple(np.shape(args[0])[:-1]) + (int(np.shape(args[3]["w_o"])[-1]),)  # (B, L_q, D)
    return None


def wrong_shape_carried(subject, fname: str, args, result) -> str | None:
    """The reason a later chapter's claim is not judged on `result` (fname's result of the wrong shape, on a function
    that fails its own claims on the fixed inputs too), or None."""
    from spec_tests.harness.claims import get as claim_of

    chapter = SHAPE_OWNERS.get(fname)
    if chapter is None or scope_unrecorded():
        return None
    claims = current().claims or ()
    if not claims or any(claim_of(c).chapter == chapter for c in claims):
        return None
    expected = _expected_shape(fname, args)
    seen = tuple(np.shape(result[0] if isinstance(result, tuple) else result))
    if expected is None or seen == expected or not lower_verdict(subject, fname):
        return None
    return (f"error carried forward: your {fname} returns shape {seen} where {expected} is expected, which the "
            f"{chapter} chapter's claims charge; this claim cannot be judged on a result of the wrong shape")


# ------------------------------------------------------------------------ the implementation's masking
# Which keys a query sees is the masks chapter's (and, for windows and documents, the mask algebra's). When the
# implementation's attention fails a claim of the masks chapter on the fixed inputs (its masking is wrong: charged
# there), a later chapter's claim called with a mask (a bias with a mask, softcap, sinks, the log-sum-exp) is judged
# on the implementation's own calls without the mask, one query row at a time on the keys the row sees (row_by_row):
# that claim's own concept is still judged on the same numbers, and the masking is not charged again. The mask
# algebra's claims are judged against the implementation's own call with the keys the reference sees passed as an
# explicit mask: whether a window or a document picks the right keys is still judged, by its own masking.
MASKING_KEYWORDS = ("mask", "is_causal", "window_size", "q_segment_ids", "kv_segment_ids")
ALGEBRA_KEYWORDS = ("window_size", "q_segment_ids", "kv_segment_ids")  # the mask algebra's own (is_causal: the masks')


def _masked(kwargs) -> bool:
    """Does the call hide keys: a masking keyword, or a bias with a -inf entry (which hides as mask=False does)?"""
    bias = kwargs.get("bias")
    return any(kwargs.get(k) is not None and kwargs.get(k) is not False for k in MASKING_KEYWORDS) or \
        (bias is not None and bool(np.any(np.asarray(bias, dtype=np.float64) == -np.inf)))


def masking_fails(subject, fname: str = "scaled_dot_product_attention", alone: bool = False) -> tuple[str, ...]:
    """The masks chapter's claims the implementation's attention (its weights, for attention_weights) fails on the
    fixed inputs; () when it holds them, or has no such function. alone: () too when it also fails its plain input
    (a formula's bug, which makes masked calls wrong too: only a masking bug proper then counts)."""
    from spec_tests.harness.claims import get as claim_of

    base = fname if fname in ("attention_weights", "multi_head_attention") else "scaled_dot_product_attention"
    if not subject.has(base):
        return ()
    failed = lower_verdict(subject, base)
    if alone and _battery(base)[0][0] in failed:
        return ()
    return tuple(c for c in failed if claim_of(c).chapter == "masks")


def masking_charged(subject, fname: str = "scaled_dot_product_attention", alone: bool = False) -> tuple[str, ...]:
    """masking_fails, noted for the report: a later claim whose relation needs the implementation's masking to hold
    (two masked calls that must agree) judges each masked call on its own rows instead (rule 4)."""
    failed = masking_fails(subject, fname, alone)
    if failed:
        _note(f"its masked calls judged without the mask, row by row: your attention fails {', '.join(failed)} "
              f"(error carried forward: the masking is charged to its own claims)")
    return failed


def _judge_masking_carried(subject, fname, args, kwargs, n, compare, precision) -> bool:
    """Rule 4 above: True (with a note) when the call is judged met with the implementation's masking carried."""
    from reference.mask_algebra import visible_keys
    from spec_tests.harness.claims import get as claim_of
    from spec_tests.harness.feedback import SpecFailure

    claims = current().claims or ()
    chapters = {claim_of(c).chapter for c in claims}
    if fname not in ("scaled_dot_product_attention", "attention_weights", "paged_attention", "multi_head_attention") \
            or not claims \
            or "masks" in chapters or not _masked(kwargs):
        return False
    failed = masking_fails(subject, fname)
    if not failed:
        return False
    oracle_fn = getattr(reference, fname)
    r_args, r_kwargs = subject.round(args), subject.round(kwargs)
    full = oracle_fn(*r_args, **r_kwargs)
    pick = (lambda out: out[n]) if isinstance(full, tuple) else (lambda out: out)
    charged = f"your {fname.replace('scaled_dot_product_attention', 'attention')} fails {', '.join(failed)}, " \
              f"which is charged there"
    try:
        if "mask_algebra" in chapters and fname == "multi_head_attention":  # (B, L) ids: no explicit mask per head
            return False
        if "mask_algebra" in chapters and fname != "paged_attention":  # the keys it picks, judged by its own masking
            found = _visible(fname, args, kwargs)
            if found is None or not any(kwargs.get(k) is not None and kwargs.get(k) is not False
                                        for k in ALGEBRA_KEYWORDS):
                return False
            explicit = {k: v for k, v in kwargs.items() if k not in ALGEBRA_KEYWORDS}  # is_causal kept as given
            explicit["mask"] = np.asarray(visible_keys(kwargs.get("mask"), False, np.shape(args[0])[-2],
                                                       np.shape(args[1])[-2], kwargs.get("window_size"),
                                                       kwargs.get("q_segment_ids"), kwargs.get("kv_segment_ids")))
            with off_the_record(subject):
                seen = subject.call(fname, *args, **kwargs)
                built = subject.call(fname, *args, **explicit)
            seen, built = pick(seen), pick(built)
            whose = f"your own {fname} given the keys the window or documents leave as an explicit mask ({charged})"
        else:  # the later concept alone, without the mask
            built = row_by_row(subject, fname, args, kwargs,
                               dead_lse=full[1] if isinstance(full, tuple) else None)
            if built is None:
                return False
            seen, built = pick(built), pick(full)
            whose = f"your own {fname} without the mask, one query row at a time on the keys it sees, against " \
                    f"the reference ({charged})"
    except Exception:  # noqa: BLE001 - a call raised: nothing to carry
        return False
    bound = pick(tolerance.bound_against(precision, oracle_fn, r_args, r_kwargs, full, fname))
    if "mask_algebra" in chapters and not isinstance(full, tuple):  # two calls of its own: the floor on theirs too
        bound = tolerance.carried_bound(precision, oracle_fn, r_args, r_kwargs, full, built, fname)
    with contextlib.suppress(SpecFailure):
        compare(seen, built, bound, f"{fname}(...): {whose}")
        _note(f"judged with {whose} (error carried forward: the masking is charged to its own claims)")
        return True
    return False


# ----------------------------------------------------------------------------------------- the hook
def judge(subject, fname: str, args, kwargs, n: int, seen, failure, compare) -> None:
    """Called by check.oracle when result `n` of `fname` failed the plain comparison (`failure`).

    Returns when the claim is met under a rule above (with a note); raises `failure` otherwise.
    `compare(seen, expected, bound, what)` is check.compare bound to this call."""
    from spec_tests.harness.feedback import SpecFailure

    claims = current().claims
    orig_kwargs = kwargs
    r_args, r_kwargs = subject.round(args), subject.round(kwargs)
    oracle_fn = getattr(reference, fname)
    pick = (lambda out: out[n]) if isinstance(seen, tuple) else (lambda out: out)
    s = pick(seen)

    # 2. precision: a float64 call answered at a lower precision, judged there (PREC-3 pays for it)
    full = oracle_fn(*r_args, **r_kwargs)
    expected = pick(full)
    at = judged_dtype(subject)
    # (a result of exact float32 values is evidence of its own; float16/bfloat16 only from the fixed inputs)
    lowered = at if at != subject.dtype else "float32" if computed_in_float32(subject, s, expected) else None
    if _precision_judged(claims) and lowered:
        with contextlib.suppress(SpecFailure):
            compare(s, expected, pick(tolerance.bound_against(lowered, oracle_fn, r_args, r_kwargs, full, fname)),
                    f"{fname}(...) at {lowered} precision")
            _note_precision(lowered)
            return

    # 1. error carried forward from a lower function that fails its own claims
    if fname in COMPOSITIONS:
        composite, names = COMPOSITIONS[fname]
        failing = _failing_parts(subject, names)
        if failing:
            try:
                carried_full = _built_on(subject, composite, r_args, r_kwargs, failing)
                carried = pick(carried_full)
            except Exception:  # noqa: BLE001 - the lower function raised: nothing to carry
                carried = None
            if carried is not None:
                precision = ("float32" if at == subject.dtype and computed_in_float32(subject, s, carried) else at) \
                    if _precision_judged(claims) else subject.dtype
                bound = tolerance.carried_bound(precision, oracle_fn, r_args, r_kwargs, full, carried_full, fname) \
                    if not isinstance(full, tuple) else \
                    pick(tolerance.bound_against(precision, oracle_fn, r_args, r_kwargs, carried_full, fname))
                whose = _whose(subject, failing)
                with contextlib.suppress(SpecFailure):
                    compare(s, carried, bound,
                            f"{fname}(...) against the reference built on {whose}")
                    note_carried(whose)
                    return

    # 3. error carried forward from the function's own formula to its masked calls
    # (the output of a call with return_lse=True too: its log-sum-exp, result 1, is still judged against the reference)
    precision = at if _precision_judged(claims) else subject.dtype
    if not isinstance(seen, tuple) or (n == 0 and kwargs.get("return_lse")):
        if isinstance(seen, tuple):
            kwargs, r_kwargs = ({k: v for k, v in d.items() if k != "return_lse"} for d in (kwargs, r_kwargs))
            full = oracle_fn(*r_args, **r_kwargs)
        if _judge_row_by_row(
                subject, fname, args, kwargs, s, compare=compare,
                bound_of=lambda built: tolerance.carried_bound(precision, oracle_fn, r_args, r_kwargs, full, built,
                                                               fname)):
            return

    # 4. error carried forward from the implementation's masking to a later chapter's masked call
    if _judge_masking_carried(subject, fname, args, orig_kwargs, n, compare, precision):
        return

    # 5. error carried forward from the default scale to a later chapter's call that leaves the scale to it
    if _judge_scale_carried(subject, fname, args, orig_kwargs, n, compare, precision):
        return
    raise failure


# ------------------------------------------------------------------------------- the default scale
# The default scale 1/sqrt(d_k) is SDPA-4's. When the implementation's attention misses the reference on the fixed
# plain input with its default scale and meets it given scale=1/sqrt(d_k) explicitly (a default taken from d_v, or
# from the wrong axis), a later chapter's call that leaves the scale to the default (softcap, sinks, the log-sum-exp,
# dropout, gradients) is judged on the same call given the scale explicitly: that chapter's concept is still judged.
# The precision chapter's claims judge the plain call itself in low precision: a wrong scale stays theirs too.
SCALED = ("scaled_dot_product_attention", "attention_weights", "paged_attention",
          "scaled_dot_product_attention_backward")


def _scale_probe(base: str) -> tuple:
    """The fixed input on which the default scale is judged: d_k = 4 and d_v = 3 (a scale taken from d_v differs),
    scores of standard deviation about 2 (a scale off by 15% moves the weights by tens of percent: well outside
    bfloat16's rounding, whose 8 bits hide the same error on unit scores)."""
    rng = np.random.default_rng(20240612)
    q, k, v = 1.5 * rng.standard_normal((2, 6, 4)), 1.5 * rng.standard_normal((2, 7, 4)), rng.standard_normal((2, 7, 3))
    return (q, k) if base == "attention_weights" else (q, k, v)


def default_scale_fails(subject, fname: str = "scaled_dot_product_attention") -> bool:
    """Does the implementation's attention (its weights, for attention_weights) miss the reference on the fixed plain
    input with its default scale, and meet it given scale = 1/sqrt(d_k)?"""
    base = "attention_weights" if fname == "attention_weights" else "scaled_dot_product_attention"
    key = (id(subject.impl), subject.dtype, base, "default scale")
    if key in _VERDICTS:
        return bool(_VERDICTS[key])
    found = False
    if subject.has(base):
        args = _scale_probe(base)
        with off_the_record(subject):
            try:
                found = _fails(subject, base, args, {}) == "failed" and \
                    _fails(subject, base, args, {"scale": 1.0 / np.sqrt(np.shape(args[0])[-1])}) is None
            except Exception:  # noqa: BLE001 - raising is another claim's failure: nothing to carry
                found = False
            except BaseException as exc:  # not implemented / not applicable: nothing to carry
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                found = False
    _VERDICTS[key] = ("SDPA-4",) if found else ()
    return found


def scale_if_charged(subject, q, fname: str = "scaled_dot_product_attention") -> dict:
    """{"scale": 1/sqrt(d_k)} (d_k from q) when the implementation's default scale fails SDPA-4 on the fixed inputs
    (charged there; noted for the report): a later claim relating several calls of its own then gives the scale
    explicitly to each; {} otherwise, and the default is used as drawn."""
    if not default_scale_fails(subject, fname):
        return {}
    _note("judged with scale=1/sqrt(d_k) given explicitly: your default scale fails SDPA-4 (error carried forward: "
          "that bug is charged there)")
    return {"scale": 1.0 / np.sqrt(np.shape(q)[-1])}


def _judge_scale_carried(subject, fname, args, kwargs, n, compare, precision) -> bool:
    """Rule 5 above: True (with a note) when the call, given scale=1/sqrt(d_k), meets the reference."""
    from spec_tests.harness.claims import get as claim_of
    from spec_tests.harness.feedback import SpecFailure

    claims = current().claims or ()
    if fname not in SCALED or not claims or kwargs.get("scale") is not None \
            or {"sdpa", "precision"} & {claim_of(c).chapter for c in claims} or not default_scale_fails(subject, fname):
        return False
    explicit = dict(kwargs, scale=1.0 / np.sqrt(np.shape(args[0 if fname != "scaled_dot_product_attention_backward"
                                                             else 1])[-1]))
    oracle_fn = getattr(reference, fname)
    r_args, r_kwargs = subject.round(args), subject.round(explicit)
    try:
        with off_the_record(subject):
            got = subject.call(fname, *args, **explicit)
        full = oracle_fn(*r_args, **r_kwargs)
    except Exception:  # noqa: BLE001 - a call raised: nothing to carry
        return False
    pick = (lambda out: out[n]) if isinstance(full, tuple) else (lambda out: out)
    whose = "scale=1/sqrt(d_k) given explicitly (your default scale fails SDPA-4, which is charged there)"
    with contextlib.suppress(SpecFailure):
        compare(pick(got), pick(full), pick(tolerance.bound_against(precision, oracle_fn, r_args, r_kwargs, full,
                                                                    fname)), f"{fname}(...) with {whose}")
        _note(f"judged with {whose} (error carried forward)")
        return True
    return False


# ------------------------------------------------------------------ a feature keyword carried through a composition
FEATURE_KEYWORDS = ("window_size", "q_segment_ids", "kv_segment_ids", "softcap", "sinks")


def judge_feature_carried(subject, fname: str, args, kwargs, failure, compare) -> None:
    """A higher function's call fname(*args, **kwargs) WITH a later chapter's keyword (window, segment ids, softcap,
    sinks) that failed against the reference (`failure`). When the implementation's own lower functions, given that
    keyword on this very call's inputs, already differ from the reference's (the feature's bug, charged to its own
    chapter's claims), its result (called again here, off the record) is judged against the reference composition built on them instead, with a note. When
    they agree with the reference, the failure stands: it is the higher function's own.
    compare(seen, expected, bound, what) raises SpecFailure on a mismatch (check.compare bound to the call)."""
    from spec_tests.harness.feedback import SpecFailure

    given = [k for k in FEATURE_KEYWORDS if kwargs.get(k) is not None]
    if fname not in COMPOSITIONS or not given:
        raise failure
    composite, names = COMPOSITIONS[fname]
    parts = tuple(n for n in names if subject.has(n))
    oracle_fn = getattr(reference, fname)
    r_args, r_kwargs = subject.round(args), subject.round(kwargs)
    expected = oracle_fn(*r_args, **r_kwargs)
    try:
        built = _built_on(subject, composite, r_args, r_kwargs, parts)
        with off_the_record(subject):
            seen = subject.call(fname, *args, **kwargs)
    except Exception:  # noqa: BLE001 - a lower function raised: nothing to carry
        raise failure from None
    at = judged_dtype(subject)
    try:  # the lower functions given the keyword agree with the reference: the higher function is at fault
        compare(built, expected, tolerance.bound_against(at, oracle_fn, r_args, r_kwargs, expected, fname),
                "your lower functions given the keyword against the reference")
    except SpecFailure:
        pass
    else:
        raise failure
    whose = f"your {', '.join(parts)} given {', '.join(given)}, which differs from the reference's on these " \
            f"heads (charged to that keyword's own chapter)"
    with contextlib.suppress(SpecFailure):
        compare(seen, built, tolerance.carried_bound(at, oracle_fn, r_args, r_kwargs, expected, built, fname),
                f"{fname}(...) against the reference built on {whose}")
        note_carried(whose)
        return
    raise failure


def failing_own_claims(subject, fname: str) -> tuple[str, ...]:
    """The claims the implementation's `fname` fails on the fixed inputs (lower_verdict), noted for the report: a
    later claim that calls `fname` with its mask only to test a relation of its own then judges that relation alone,
    not the call against the reference again (error carried forward: those claims pay for the bug)."""
    failed = lower_verdict(subject, fname)
    if failed:
        _note(f"judged on its relation alone: your {fname} fails {', '.join(failed)} (error carried forward: that "
              f"bug is charged to its own claim)")
    return failed
