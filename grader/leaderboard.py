"""The optional leaderboard: a submission's attention speed and peak memory, beside the reference's.

With a `[leaderboard]` table in the rubric, the grader adds Gradescope's `leaderboard` entries to
results.json (Gradescope shows them, under pseudonyms, when the assignment has a leaderboard):

    [leaderboard]
    size = [1, 8, 512, 64]     # B, H, L, d of q, k and v (self-attention, L_q = L_k = L)
    dtype = "float32"           # must be one the submission declares
    causal = false
    baseline = "reference"      # the built-in implementation the speed is relative to (impls/<name>.py)

The entries, for `scaled_dot_product_attention(q, k, v, is_causal=causal)` at that size:

    speed  = t_baseline / t_submission     (x the baseline; higher ranks first)
    time   = t_submission, in milliseconds (lower ranks first)
    memory = the worker's peak resident memory during one call, beyond what it held before, in MB

Both implementations run in the grader's worker (spec_tests/sandbox/), each in its own, with the
rubric's limits (the baseline without its bans: the reference is banned to a submission). The
time is measured here, around a request that makes `repeats` calls on arrays already in the worker
and converts nothing (worker `bench`); t is the best of a few such requests, divided by `repeats`.
The memory is read from outside the worker: Linux's peak resident set (`VmHWM`, reset through
`/proc/PID/clear_refs` where the grader may, which it may as root) less the resident set before the
call. The submission cannot change either number from inside its process.

A submission is ranked only when its output at that size is within the suite's tolerance of the
float64 reference (spec_tests/harness/tolerance.py) and the calls used nothing the rubric bans;
otherwise speed is 0 and the other entries say "not ranked", and the reason is in the feedback.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from grader import uploads
from spec_tests.harness import arrays, tolerance
from spec_tests.sandbox import isolation

FNAME = "scaled_dot_product_attention"
KEYS = {"size", "dtype", "causal", "baseline"}
DEFAULT = {"size": [1, 8, 512, 64], "dtype": "float32", "causal": False, "baseline": "reference"}
TARGET_S = 0.3  # wall seconds one timed request aims at
REQUESTS = 3  # timed requests; the best counts
NOT_RANKED = "not ranked"


@dataclass(frozen=True)
class Settings:
    size: tuple[int, int, int, int]
    dtype: str
    causal: bool
    baseline: str

    @classmethod
    def from_table(cls, table: dict, where: str) -> "Settings":
        unknown = set(table) - KEYS
        if unknown:
            raise ValueError(f"{where}: unknown [leaderboard] keys {sorted(unknown)}; known: {sorted(KEYS)}")
        t = {**DEFAULT, **table}
        size = t["size"]
        if (not isinstance(size, list) or len(size) != 4
                or any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in size)):
            raise ValueError(f"{where}: [leaderboard] size must be four positive integers [B, H, L, d], got {size!r}")
        if t["dtype"] not in arrays.EPS:
            raise ValueError(f"{where}: [leaderboard] dtype must be one of {sorted(arrays.EPS)}, got {t['dtype']!r}")
        if not isinstance(t["causal"], bool):
            raise ValueError(f"{where}: [leaderboard] causal must be true or false, got {t['causal']!r}")
        return cls(tuple(size), str(t["dtype"]), t["causal"], str(t["baseline"]))


@dataclass
class Measure:
    seconds: float | None = None  # one call
    dtype: str = ""  # the dtype it ran in
    peak_mb: float | None = None
    memory_method: str = ""
    problem: str | None = None  # why it cannot be ranked


@dataclass
class Board:
    settings: Settings
    submission: Measure
    baseline: Measure

    @property
    def ranked(self) -> bool:
        return (self.submission.problem is None and self.baseline.problem is None
                and bool(self.submission.seconds) and bool(self.baseline.seconds))

    def entries(self) -> list[dict]:
        """Gradescope's `leaderboard` array."""
        if not self.ranked:
            return [{"name": "speed (x reference)", "value": 0, "order": "desc"},
                    {"name": "time (ms)", "value": NOT_RANKED, "order": "asc"},
                    {"name": "peak memory (MB)", "value": NOT_RANKED, "order": "asc"}]
        s, b = self.submission, self.baseline
        return [{"name": "speed (x reference)", "value": round(b.seconds / s.seconds, 3), "order": "desc"},
                {"name": "time (ms)", "value": round(1e3 * s.seconds, 3), "order": "asc"},
                {"name": "peak memory (MB)",
                 "value": round(s.peak_mb, 2) if s.peak_mb is not None else NOT_RANKED, "order": "asc"}]

    def text(self) -> str:
        """The feedback's paragraph on it (markdown)."""
        B, H, L, d = self.settings.size
        what = (f"`{FNAME}(q, k, v{', is_causal=True' if self.settings.causal else ''})` with q, k, v of shape "
                f"({B}, {H}, {L}, {d}) in {self.settings.dtype}")
        if not self.ranked:
            why = self.submission.problem or self.baseline.problem or "it could not be timed"
            return f"**Leaderboard:** not ranked: {why}. It times {what}."
        s, b = self.submission, self.baseline
        memory = f", peak memory {s.peak_mb:.1f} MB" if s.peak_mb is not None else ""
        return (f"**Leaderboard:** {what}: {1e3 * s.seconds:.3g} ms a call, {b.seconds / s.seconds:.3g}x the "
                f"speed of `{self.settings.baseline}` ({1e3 * b.seconds:.3g} ms in {b.dtype}, on the same grading machine)"
                f"{memory}.")

    def extra(self) -> dict:
        """For results.json's extra_data (the instructor)."""
        return {"settings": dataclasses.asdict(self.settings), "submission": dataclasses.asdict(self.submission),
                "baseline": dataclasses.asdict(self.baseline)}


def inputs(settings: Settings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, k, v (float64 values already rounded to the dtype: what the implementation receives)."""
    from spec_tests.harness.strategies import normal  # imports Hypothesis: only when a leaderboard is timed

    return tuple(arrays.round_trip(normal(100 + i, settings.size), settings.dtype) for i in range(3))


# -- measuring in a worker ------------------------------------------------------------------
def _status_kb(pid: int, key: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _reset_peak(pid: int) -> bool:
    """Reset the process's peak resident set to its current one (Linux: `echo 5 > /proc/PID/clear_refs`)."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def measure(spec: str, limits, settings: Settings, check_output: bool, any_dtype: bool = False) -> Measure:
    """Time `spec`'s SDPA at the settings' size in a worker of its own, and its peak memory. `any_dtype` (the
    baseline): in the settings' dtype when it declares it, else in the first dtype it declares."""
    result = Measure()
    try:
        impl = isolation.load(spec, limits)
    except Exception as exc:  # noqa: BLE001 - a submission that cannot even load is graded elsewhere
        result.problem = f"it could not be loaded ({exc})"
        return result
    session = impl.remote
    try:
        if settings.dtype not in impl.dtypes and not (any_dtype and impl.dtypes):
            result.problem = f"it does not declare {settings.dtype} in DTYPES"
            return result
        result.dtype = settings.dtype if settings.dtype in impl.dtypes else impl.dtypes[0]
        settings = dataclasses.replace(settings, dtype=result.dtype)
        subject = isolation.IsolatedSubject(impl, settings.dtype)
        if not subject.has(FNAME, "is_causal"):
            result.problem = f"it has no {FNAME}() with is_causal"
            return result
        return _timed(subject, session, settings, check_output, result)
    except (Exception, isolation.IsolationFailure) as exc:  # noqa: BLE001 - its failure is its own, and explained
        result.problem = f"calling it failed: {_problem(exc)}"
        return result
    finally:
        session.close()
        isolation.forget(session)


def _problem(exc: BaseException) -> str:
    """The line of a failure that says what went wrong (an isolated call's "problem:" line), shortened."""
    text = str(exc).strip()
    lines = [ln.strip()[len("problem:"):].strip() for ln in text.splitlines() if ln.strip().startswith("problem:")]
    return (lines[0] if lines else text.splitlines()[0] if text else type(exc).__name__)[:400]


def _timed(subject, session, settings: Settings, check_output: bool, result: Measure) -> Measure:
    q, k, v = inputs(settings)
    handles = subject.native((q, k, v))
    kwargs = {"is_causal": settings.causal}
    began = time.perf_counter()
    out = subject.bench(FNAME, *handles, repeats=1, **kwargs)  # the first call (warms caches, compiles)
    first = time.perf_counter() - began
    if check_output:
        problem = _wrong(subject.to_numpy(out), (q, k, v), settings)
        if problem:
            result.problem = problem
            return result
    repeats = max(1, min(50, int(TARGET_S / max(first, 1e-6))))
    pid = session.proc.pid
    before = _status_kb(pid, "VmRSS")
    reset = _reset_peak(pid)
    best = float("inf")
    for _ in range(REQUESTS):
        began = time.perf_counter()
        subject.bench(FNAME, *handles, repeats=repeats, **kwargs)
        best = min(best, (time.perf_counter() - began) / repeats)
    peak = _status_kb(pid, "VmHWM")
    result.seconds = best
    if before is not None and peak is not None:
        result.peak_mb = max(0, peak - before) / 1024
        result.memory_method = ("peak resident set (VmHWM, reset) less the resident set before" if reset else
                                "peak resident set since the worker started (VmHWM; not reset: no permission) "
                                "less the resident set before")
    return result


def _wrong(seen, qkv, settings: Settings) -> str | None:
    """Why the output at the leaderboard's size is not right, or None."""
    from reference.attention import scaled_dot_product_attention as sdpa

    seen = np.asarray(seen, dtype=np.float64)
    expected = sdpa(*qkv, is_causal=settings.causal)
    if seen.shape != expected.shape:
        return f"its output has shape {seen.shape}, not {expected.shape}"
    # The suite's rule (tolerance.oracle_bound) with the output terms bounded by max|V| (each output row is a weighted
    # mean of V's rows): bound_against's per-term sizes would hold B*H*L*L*d values at a leaderboard's size.
    yard = tolerance.yardstick(sdpa, qkv, {"is_causal": settings.causal}, settings.dtype)
    bound = tolerance.oracle_bound(settings.dtype, expected, yard, own=tolerance.attention_output_size(qkv[2]))
    err = float(np.max(np.abs(seen - expected))) if np.all(np.isfinite(seen)) else float("inf")
    if not err <= bound.allowed:
        return (f"its output at this size is {err:.3g} from the reference's (allowed {bound.allowed:.3g}), so its "
                "speed is not comparable")
    return None


def run(submission: Path, rubric, settings: Settings) -> Board:
    """The leaderboard's measurements for one submission (the rubric's [leaderboard] settings)."""
    with tempfile.TemporaryDirectory(prefix="mha-board-") as work:
        staged = uploads.stage(Path(submission), Path(work))
        mine = measure(str(staged.entry), rubric.limits, settings, check_output=True)
        base = dataclasses.replace(rubric.limits, banned=(), banned_ops=())
        theirs = measure(settings.baseline, base, settings, False, any_dtype=True) if mine.problem is None else Measure()
    return Board(settings, mine, theirs)
