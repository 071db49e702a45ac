"""Running the grader as an instructor would (`python -m spec_tests.grade`), and checking what it wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

HOSTILE = ROOT / "tests" / "hostile"
RESULT_KEYS = {"score", "execution_time", "output", "visibility", "tests"}
TEST_KEYS = {"name", "score", "max_score", "status", "output", "visibility", "tags"}
VISIBILITY = {"visible", "hidden", "after_due_date", "after_published"}


def grade(*args: str, timeout: int = 900, cwd: Path | None = None, extra_env: dict | None = None):
    """Run the grader; return (exit code, its output). The machine's speed (harness/limits.py), which scales the
    per-call limits, is measured once by this process and passed on, not measured again by each grader (the
    grader's own measurement is what test_container.py and test_grader_faults.py run)."""
    from spec_tests.sandbox.limits import speed

    env = {k: v for k, v in os.environ.items() if k not in ("MHA_SPEC_IMPL", "CI", "MHA_SPEC_MEASUREMENTS")}
    env["MHA_SPEC_SPEED"] = f"{speed():.3f}"
    env.update(extra_env or {})
    proc = subprocess.run([sys.executable, "-m", "spec_tests.grade", *args], cwd=cwd or ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def results(out: Path) -> dict:
    """results.json, checked against Gradescope's format."""
    doc = json.loads((out / "results.json").read_text())
    assert RESULT_KEYS <= set(doc), f"results.json lacks {RESULT_KEYS - set(doc)}"
    assert isinstance(doc["score"], (int, float)) and isinstance(doc["execution_time"], int)
    assert isinstance(doc["output"], str) and doc["visibility"] in VISIBILITY
    for t in doc["tests"]:
        assert TEST_KEYS <= set(t), f"a test entry lacks {TEST_KEYS - set(t)}: {t.get('name')}"
        assert t["status"] in ("passed", "failed") and t["visibility"] in VISIBILITY
        assert 0 <= t["score"] <= t["max_score"] + 1e-9, t["name"]
        assert isinstance(t["tags"], list) and isinstance(t["output"], str)
    assert abs(sum(t["score"] for t in doc["tests"]) - doc["score"]) < 1e-3
    return doc


def worker_pids(out: Path) -> list[int]:
    """The worker processes the grading started, from the run's log ("isolation: ... worker pids [...]")."""
    pids = []
    for line in (out / "grading.log").read_text().splitlines():
        if line.startswith("isolation:") and "worker pids [" in line:
            pids += [int(p) for p in line.split("worker pids [")[1].rstrip("]").split(",") if p.strip()]
    return pids


def worker_uid(out: Path) -> int | None:
    """The worker's user id, from the run's log ("isolation: ... worker uid N, ..."); None when not run as root."""
    for line in (out / "grading.log").read_text().splitlines():
        if line.startswith("isolation:") and "worker uid " in line:
            value = line.split("worker uid ")[1].split(",")[0]
            if value.isdigit():
                return int(value)
    return None


def processes_of_user(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                st = os.stat(f"/proc/{entry}")
            except OSError:
                continue
            if st.st_uid == uid and alive(int(entry)):
                found.append(int(entry))
    return found


def files_of_user(uid: int, tops=("/tmp", "/var/tmp", "/dev/shm")) -> list[str]:
    """Files and folders owned by `uid` anywhere under `tops` (where any user may write)."""
    found = []
    for top in tops:
        for folder, dirs, files in os.walk(top):
            for name in dirs + files:
                path = os.path.join(folder, name)
                try:
                    if os.lstat(path).st_uid == uid:
                        found.append(path)
                except OSError:
                    continue
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return "State:\tZ" not in f.read()
    except OSError:
        return False


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if marker.encode() in f.read() and alive(int(entry)):
                        found.append(int(entry))
            except OSError:
                continue
    return found


MUTANTS_DIR = ROOT / "impls" / "mutants"

# A student's float32 shortcut on top of a correct file: the scores are computed in float32
# whatever the inputs' dtype (the mutants' base is self-contained NumPy; its `rewire` is dropped).
FLOAT32_SCORES = '''

_scores_exact = _scores


def _scores(q, k, scale):
    return _scores_exact(q.astype(np.float32), k.astype(np.float32), scale).astype(q.dtype)
'''

# LayerNorm with eps outside the square root, on top of a correct file.
EPS_OUTSIDE = '''

def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x)
    mean = x.mean(axis=-1, keepdims=True)
    return gamma * (x - mean) / (np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True)) + eps) + beta
'''


def correct_source() -> str:
    """A correct, self-contained NumPy submission (the mutants' base without its rewiring helper)."""
    text = (MUTANTS_DIR / "_base.py").read_text()
    return text[:text.index("def rewire(")]


def write_submission(path: Path, *patches: str, dtypes: tuple[str, ...] | None = None) -> Path:
    """A submission file: the correct one, then each patch (which replaces a function), then DTYPES."""
    text = correct_source() + "".join(patches)
    if dtypes is not None:
        text += f"\nDTYPES = {dtypes!r}\n"
    path.write_text(text)
    return path


# An implementation written from scratch for the copy check's test, in a style of its own: it
# shares no code with reference/ or impls/ (written for this test, not adapted from them).
INDEPENDENT = '''
"""Homework 3: attention, by a student who wrote everything from the lecture's equations."""
import math
import numpy

BACKEND = "numpy"
DTYPES = ("float64", "float32")


def _allowed_keys(n_queries, n_keys, user_mask, causal):
    ok = numpy.ones((n_queries, n_keys), dtype=bool)
    if causal:
        offset = n_keys - n_queries
        rows = numpy.arange(n_queries).reshape(-1, 1)
        cols = numpy.arange(n_keys).reshape(1, -1)
        ok = cols <= rows + offset
    if user_mask is not None:
        ok = numpy.logical_and(ok, numpy.asarray(user_mask, dtype=bool))
    return ok


def attention_weights(q, k, mask=None, is_causal=False, scale=None):
    q = numpy.asarray(q)
    k = numpy.asarray(k)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("query width %d differs from key width %d" % (q.shape[-1], k.shape[-1]))
    factor = (1.0 / math.sqrt(q.shape[-1])) if scale is None else scale
    logits = numpy.einsum("...id,...jd->...ij", q, k) * q.dtype.type(factor)
    keep = _allowed_keys(q.shape[-2], k.shape[-2], mask, is_causal)
    shape = numpy.broadcast_shapes(keep.shape, logits.shape)
    keep, logits = numpy.broadcast_to(keep, shape), numpy.broadcast_to(logits, shape)
    logits = numpy.where(keep, logits, -numpy.inf)
    top = logits.max(axis=-1, keepdims=True)
    top = numpy.where(numpy.isfinite(top), top, 0)
    e = numpy.where(keep, numpy.exp(logits - top), 0)
    total = e.sum(axis=-1, keepdims=True)
    return numpy.divide(e, total, out=numpy.zeros_like(e), where=total > 0)


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    v = numpy.asarray(v)
    if numpy.asarray(k).shape[-2] != v.shape[-2]:
        raise ValueError("keys (%d) and values (%d) differ in length" % (numpy.asarray(k).shape[-2], v.shape[-2]))
    return numpy.einsum("...ij,...jd->...id", attention_weights(q, k, mask, is_causal, scale), v)


def split_heads(x, num_heads):
    x = numpy.asarray(x)
    width = x.shape[-1]
    if num_heads < 1 or width % num_heads:
        raise ValueError("cannot split %d features into %d heads" % (width, num_heads))
    pieces = x.reshape(x.shape[:-1] + (num_heads, width // num_heads))
    return numpy.moveaxis(pieces, -2, -3)


def merge_heads(heads):
    heads = numpy.asarray(heads)
    joined = numpy.moveaxis(heads, -3, -2)
    return joined.reshape(joined.shape[:-2] + (joined.shape[-2] * joined.shape[-1],))


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False):
    def lin(a, name):
        out = numpy.asarray(a) @ weights["w_" + name]
        if weights.get("b_" + name) is not None:
            out = out + weights["b_" + name]
        return out
    heads = [split_heads(lin(a, n), num_heads) for a, n in ((query, "q"), (key, "k"), (value, "v"))]
    mixed = scaled_dot_product_attention(heads[0], heads[1], heads[2], mask, is_causal)
    return lin(merge_heads(mixed), "o")


def layer_norm(x, gamma, beta, eps=1e-5):
    x = numpy.asarray(x)
    centred = x - x.mean(axis=-1, keepdims=True)
    spread = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / numpy.sqrt(spread + eps) * gamma + beta


def sinusoidal_positional_encoding(length, d_model):
    table = numpy.zeros((length, d_model))
    where = numpy.arange(length)[:, None]
    rates = numpy.power(10000.0, -numpy.arange(0, d_model, 2) / d_model)
    table[:, 0::2] = numpy.sin(where * rates)
    table[:, 1::2] = numpy.cos(where * rates[: d_model // 2])
    return table
'''


# -- every known bug graded once per session, shared by the tests that need it ---------------------

def shared_folder(tmp_path_factory) -> Path:
    """A folder all of this session's processes see: pytest-xdist's workers share their base's parent."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "mutant-grades"


def grade_mutant(name: str, shared: Path) -> tuple[int, str, Path]:
    """Grade one mutant (impls/mutants/NAME.py), on a rubric of the claims it is recorded to fail, a point
    each, once per session: the first test to ask grades it under a lock, the others read its results.
    Returns (the grader's exit code, its output, the folder holding results.json and feedback.md)."""
    import fcntl

    from tests.helpers import mutant_claims

    folder = shared / name
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = folder / "exit-code"
        if not done.exists():
            rubric = folder / "rubric.toml"
            rubric.write_text("[grading]\ntotal_timeout = 600\n\n"
                              + "".join(f'[claims."{c}"]\npoints = 1\n' for c in mutant_claims(name)))
            code, log = grade(str(MUTANTS_DIR / f"{name}.py"), "--out", str(folder / "out"), "--rubric", str(rubric))
            (folder / "log.txt").write_text(log)
            done.write_text(str(code))
    return int(done.read_text()), (folder / "log.txt").read_text(), folder / "out"
