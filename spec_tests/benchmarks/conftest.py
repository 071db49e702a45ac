"""Benchmark settings: sizes, dtypes and threads, from the environment; and the `bench` helper.

    MHA_SPEC_BENCH_SIZE      tiny | default | large   (tiny: every case once, in seconds, for CI)
    MHA_SPEC_BENCH_DTYPES    comma list of dtypes to benchmark (default float32 on a CPU,
                             float16,bfloat16 on a GPU); an implementation is benchmarked in
                             those of its DTYPES that are listed
    MHA_SPEC_BENCH_THREADS   threads for PyTorch's intra-op pool and for BLAS (default: all cores)
    MHA_SPEC_BENCH_MIN_ROUNDS  timed rounds per case at least (default 3; more when a call is fast)
    MHA_SPEC_BENCH_SECONDS   time spent timing one case, at most (default 2; CI's docs run uses less)

Every case times the implementation's own call on its own arrays (converted before the timed
region; on a GPU the timed call ends with torch.cuda.synchronize()), then measures the peak
extra memory of one more call (spec_tests/harness/memory.py), and records in extra_info:
impl, op, dtype, device, B, H, L (= L_q), L_k, d, D, causal, flops, gflops, peak_bytes,
memory_method, threads, load_average (the 1-minute load when the case ended), and axis ("D"
for LayerNorm, whose groups vary the width; "L", the length, when absent).
"""

from __future__ import annotations

import contextlib
import functools
import os
import subprocess
import time
from pathlib import Path

import pytest

from spec_tests.harness import memory

SIZE = os.environ.get("MHA_SPEC_BENCH_SIZE", "default")
if SIZE not in ("tiny", "default", "large"):
    raise pytest.UsageError(f"MHA_SPEC_BENCH_SIZE must be tiny, default or large, got {SIZE!r}")


@functools.cache
def dtypes() -> frozenset[str]:
    """The dtypes benchmarked: MHA_SPEC_BENCH_DTYPES, else float16 and bfloat16 on a GPU, float32 on a CPU.
    Asked only when benchmarks are collected: this conftest loads in every run of the suite, and
    importing PyTorch to ask for a GPU costs seconds."""
    given = os.environ.get("MHA_SPEC_BENCH_DTYPES")
    if given is None:
        try:
            import torch

            given = "float16,bfloat16" if torch.cuda.is_available() else "float32"
        except ModuleNotFoundError:
            given = "float32"
    return frozenset(d.strip() for d in given.split(",") if d.strip())


THREADS = int(os.environ.get("MHA_SPEC_BENCH_THREADS") or os.cpu_count() or 1)
TARGET_SECONDS = 0.05 if SIZE == "tiny" else float(os.environ.get("MHA_SPEC_BENCH_SECONDS", "2.0"))  # per case (>= MIN_ROUNDS rounds)
MIN_ROUNDS = 1 if SIZE == "tiny" else int(os.environ.get("MHA_SPEC_BENCH_MIN_ROUNDS", "3"))
MAX_ROUNDS = 3 if SIZE == "tiny" else max(50, MIN_ROUNDS)


HERE = Path(__file__).resolve().parent


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None


# The commit measured: taken when this module is imported, before any benchmark runs (pytest-benchmark
# takes it when it writes the JSON, at the end, when the tree may have moved on).
_START_COMMIT = {"id": (_git("rev-parse", "HEAD") or "").strip() or None,
                 "dirty": bool((_git("status", "--porcelain", "--untracked-files=no") or "").strip())}


def pytest_benchmark_update_commit_info(config, commit_info):
    """commit_info's id and dirty flag as they were when the benchmarks started."""
    if _START_COMMIT["id"]:
        if commit_info.get("id") != _START_COMMIT["id"] or commit_info.get("dirty") != _START_COMMIT["dirty"]:
            commit_info["at_end"] = {"id": commit_info.get("id"), "dirty": commit_info.get("dirty")}
        commit_info.update(_START_COMMIT)


def pytest_collection_modifyitems(config, items):
    """Benchmark each implementation only in the dtypes asked for (this hook sees every item: only ours)."""
    keep, drop = [], []
    for item in items:
        subject = getattr(item, "callspec", None) and item.callspec.params.get("impl")
        ours = Path(str(item.path)).resolve().parent == HERE
        (drop if ours and subject is not None and subject.dtype not in dtypes() else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@contextlib.contextmanager
def thread_limits(n: int):
    """PyTorch's intra-op threads and BLAS's threads (threadpoolctl) set to n, restored afterwards."""
    limiter = None
    try:
        from threadpoolctl import threadpool_limits

        limiter = threadpool_limits(limits=n)
    except ModuleNotFoundError:  # BLAS keeps its own default (set OPENBLAS_NUM_THREADS / MKL_NUM_THREADS)
        pass
    try:
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(n)
    except ModuleNotFoundError:
        torch = None
    try:
        yield n
    finally:
        if torch is not None:
            torch.set_num_threads(before)
        if limiter is not None:
            limiter.restore_original_limits()


@pytest.fixture(scope="session", autouse=True)
def threads():
    """All benchmarks run with THREADS threads in PyTorch and in BLAS."""
    with thread_limits(THREADS) as n:
        yield n


def _synchronised(fn, device):
    if device != "cuda":
        return fn
    import torch

    def run(*args, **kwargs):
        out = fn(*args, **kwargs)
        torch.cuda.synchronize()
        return out

    return run


def run_case(benchmark, impl, fname: str, args: tuple, kwargs: dict, info: dict, flops: float | None) -> None:
    """Time impl.fname(*args, **kwargs) on native arrays, measure its peak memory, record extra_info."""
    fn = _synchronised(impl.function(fname, *kwargs), impl.impl.device)
    native_args, native_kwargs = impl.native(args), impl.native(kwargs)
    start = time.perf_counter()
    fn(*native_args, **native_kwargs)  # warm-up (and the measure of how many rounds fit the time budget)
    once = max(time.perf_counter() - start, 1e-6)
    rounds = max(MIN_ROUNDS, min(MAX_ROUNDS, int(TARGET_SECONDS / once)))
    benchmark.group = f"{info['op']} {info['shape']}"
    benchmark.pedantic(fn, args=native_args, kwargs=native_kwargs, rounds=rounds, iterations=1)
    _, peak = memory.peak_bytes(lambda: fn(*native_args, **native_kwargs), impl.backend, impl.impl.device)
    stats = getattr(benchmark, "stats", None)
    mean = stats.stats.mean if stats is not None else None
    benchmark.extra_info.update(
        info, impl=impl.name, dtype=impl.dtype, device=impl.impl.device, threads=THREADS,
        flops=flops, gflops=(flops / mean / 1e9) if flops and mean else None,
        peak_bytes=int(peak), memory_method=memory.method(impl.backend, impl.impl.device),
        load_average=round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    )
