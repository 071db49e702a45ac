"""The chunked implementations' performance targets, as ratios measured side by side in one run.

    python -m spec_tests.benchmarks.ratios                    # measure now, at L = 4096, all cores
    python -m spec_tests.benchmarks.ratios --impls torch_chunked,torch_sdpa --rounds 9
    python -m spec_tests.benchmarks.ratios --threads 1 --L 2048 --rounds 7
    python -m spec_tests.benchmarks.ratios build/sweep.json   # from a saved bench_sweep.py run instead

Targets, on a CPU, at L = 4096 (B=1, H=8, d=64, float32, no mask):
  torch_chunked  >= 0.8x the throughput of PyTorch's own F.scaled_dot_product_attention (torch_sdpa),
                 with peak extra memory <= 2x its peak;
  numpy_chunked  >= 1.5x faster than the naive NumPy path (numpy_fast, which builds the L x L matrix),
                 with peak extra memory <= 1/20 of its peak.

Measuring now, the four implementations take turns: each round calls each of them once, so
that a burst of other work on a shared machine slows all four alike, and each one's time is
its fastest round. Inputs are converted before timing. Memory is measured two ways:

  allocator  the peak extra bytes of one more call, counted by the allocator's events
             (spec_tests/harness/memory.py, as in the benchmark suite): PyTorch's profiler follows
             the calling thread only, so what torch_chunked's worker threads allocate themselves
             (a few vectors of block_q rows each; their score tiles are allocated by the caller)
             is missed;
  resident   the growth of the process's resident set (peak VmHWM minus VmRSS before) over the
             first call at L in a fresh process per implementation, after one call at L = 512 that
             sets up the runtime's thread pools and buffers: it misses nothing the call touches.

Both memory targets must hold. The report prints the load average it ran under. From a saved
pytest-benchmark JSON, each case's fastest round and the allocator count are used.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

IMPLS = ("torch_chunked", "torch_sdpa", "numpy_chunked", "numpy_fast")
# (what, numerator impl, denominator impl, quantity, target, "min" = at least / "max" = at most)
TARGETS = [
    ("throughput torch_chunked / torch_sdpa", "torch_chunked", "torch_sdpa", "gflops", 0.8, "min"),
    ("allocator peak torch_chunked / torch_sdpa", "torch_chunked", "torch_sdpa", "peak_bytes", 2.0, "max"),
    ("resident growth torch_chunked / torch_sdpa", "torch_chunked", "torch_sdpa", "rss_bytes", 2.0, "max"),
    ("speed-up numpy_chunked over numpy_fast", "numpy_fast", "numpy_chunked", "seconds", 1.5, "min"),
    ("allocator peak numpy_chunked / numpy_fast", "numpy_chunked", "numpy_fast", "peak_bytes", 1 / 20, "max"),
    ("resident growth numpy_chunked / numpy_fast", "numpy_chunked", "numpy_fast", "rss_bytes", 1 / 20, "max"),
]
B, H, D_HEAD = 1, 8, 64
WARM_L = 512  # the warm-up call of the resident-memory measurement


def flops(L: int, causal: bool) -> float:
    return 4.0 * B * H * L * L * D_HEAD / (2.0 if causal else 1.0)


def _inputs(L: int):
    from spec_tests.harness.strategies import normal

    return tuple(normal(10 + i, (B, H, L, D_HEAD)) for i in range(3))


def _call(name: str, L: int, causal: bool):
    """(subject, a function calling name's SDPA on float32 inputs already converted to its arrays)."""
    from spec_tests.harness import loader
    from spec_tests.harness.subject import Subject

    impl = loader.load(name)
    if impl.unavailable:
        sys.exit(f"{name} is unavailable here: {impl.unavailable}")
    subject = Subject(impl, "float32")
    fn = subject.function("scaled_dot_product_attention")
    args = subject.native(_inputs(L))
    return subject, lambda: fn(*args, is_causal=causal)


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def resident_growth(name: str, L: int, causal: bool, threads: int) -> dict:
    """In this (fresh) process: the growth of the resident set over name's first call at L, in bytes.

    One call at L = WARM_L first sets up what every first call sets up (thread pools, the BLAS's
    buffers); it is not counted, as the allocator count does not count it either.
    VmHWM is reset to the current VmRSS (writing 5 to /proc/self/clear_refs, Linux >= 4.0) after
    the inputs are made; where that is refused, getrusage's peak is used, which counts the call
    only if it goes above everything before it.
    """
    import resource

    from spec_tests.benchmarks.conftest import thread_limits

    _, warm = _call(name, WARM_L, causal)
    _, call = _call(name, L, causal)
    with thread_limits(threads):
        warm()  # the runtime's one-time set-up (thread pools, library buffers) at a small size, not counted
        del warm
        try:
            Path("/proc/self/clear_refs").write_text("5")
            reset = True
        except OSError:
            reset = False
        if reset and _status_kib("VmHWM") is not None:
            before = _status_kib("VmRSS")
            call()
            return {"rss_bytes": (_status_kib("VmHWM") - before) * 1024, "rss_method": "VmHWM - VmRSS"}
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        call()
        return {"rss_bytes": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024,
                "rss_method": "ru_maxrss growth"}


def resident_in_fresh_process(name: str, L: int, causal: bool, threads: int) -> dict:
    cmd = [sys.executable, "-m", "spec_tests.benchmarks.ratios", "--resident-of", name, "--L", str(L),
           "--threads", str(threads)] + (["--causal"] if causal else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2],
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
                              str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH")]))))
    if proc.returncode != 0:
        sys.exit(f"measuring {name}'s resident memory failed:\n{proc.stdout}{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(L: int, threads: int, causal: bool, rounds: int, impls=IMPLS) -> dict:
    """impl -> {seconds (fastest round), median, gflops, peak_bytes, rss_bytes, threads, rounds}, taking turns."""
    from spec_tests.benchmarks.conftest import thread_limits
    from spec_tests.harness import memory

    resident = {name: resident_in_fresh_process(name, L, causal, threads) for name in impls}  # before the rest
    calls = {name: _call(name, L, causal) for name in impls}
    found = {}
    with thread_limits(threads):
        for name, (_, call) in calls.items():
            call()  # warm-up
        times = {name: [] for name in calls}
        for _ in range(rounds):
            for name, (_, call) in calls.items():
                start = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - start)
        for name, (subject, call) in calls.items():
            _, peak = memory.peak_bytes(call, subject.backend, subject.impl.device)
            fastest = min(times[name])
            found[name] = dict(seconds=fastest, gflops=flops(L, causal) / fastest / 1e9, peak_bytes=peak,
                               threads=threads, rounds=rounds, median=float(np.median(times[name])),
                               **resident[name])
    return found


def from_json(data: dict, L: int, causal: bool, impls=IMPLS) -> dict:
    """impl -> {seconds (fastest round), gflops, peak_bytes, threads, rounds} from a bench_sweep.py JSON."""
    found = {}
    for b in data["benchmarks"]:
        info = b.get("extra_info", {})
        if info.get("op") == "sdpa" and info.get("L") == L and info.get("causal") == causal \
                and info.get("B") == B and info.get("H") == H and info.get("d") == D_HEAD \
                and info.get("dtype") == "float32":
            fastest = b["stats"]["min"]
            found[info["impl"]] = dict(seconds=fastest, gflops=info["flops"] / fastest / 1e9,
                                       peak_bytes=info.get("peak_bytes"), threads=info.get("threads"),
                                       rounds=b["stats"]["rounds"], median=b["stats"]["median"])
    found = {i: c for i, c in found.items() if i in impls}
    missing = [i for i in impls if i not in found]
    if missing:
        sys.exit(f"no sweep result at L={L} for {missing} (found {sorted(found)})")
    return found


def _mib(x) -> str:
    return "-" if x is None else f"{x / 2**20:.1f}"


def report(found: dict, L: int, causal: bool, load_before: tuple | None = None) -> bool:
    impls = [i for i in IMPLS if i in found] + [i for i in found if i not in IMPLS]
    threads = sorted({found[i]["threads"] for i in impls})
    load = os.getloadavg()
    during = "" if load_before is None else f"{load_before[0]:.2f} before, "
    print(f"SDPA forward, B={B} H={H} L={L} d={D_HEAD} float32{' causal' if causal else ''}, threads {threads}; "
          f"load average (1 min) {during}{load[0]:.2f} after (5 min {load[1]:.2f}) on {os.cpu_count()} cores")
    print(f"  {'impl':<15}{'fastest s':>10}{'median s':>10}{'GFLOP/s':>10}{'alloc MiB':>11}{'resident MiB':>14}"
          f"{'rounds':>8}")
    for i in impls:
        c = found[i]
        print(f"  {i:<15}{c['seconds']:>10.3f}{c['median']:>10.3f}{c['gflops']:>10.2f}"
              f"{_mib(c.get('peak_bytes')):>11}{_mib(c.get('rss_bytes')):>14}{c['rounds']:>8}")
    ok_all = True
    for what, num, den, key, target, kind in TARGETS:
        if num not in found or den not in found or found[num].get(key) is None or found[den].get(key) is None:
            continue
        ratio = found[num][key] / found[den][key] if found[den][key] else float("inf")
        ok = ratio >= target if kind == "min" else ratio <= target
        ok_all &= ok
        bound = f"{'>=' if kind == 'min' else '<='} {target:.3g}"
        print(f"  {what:<42} {ratio:8.3f}   target {bound:<10} {'met' if ok else 'MISSED'}")
    return ok_all


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="?", help="a pytest-benchmark JSON holding bench_sweep.py's cases (default: measure now)")
    ap.add_argument("--L", type=int, default=4096)
    ap.add_argument("--causal", action="store_true", help="the causal cases instead of the full ones")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="PyTorch and BLAS threads (default: all cores)")
    ap.add_argument("--rounds", type=int, default=7, help="rounds in which each implementation runs once (default 7)")
    ap.add_argument("--impls", default=",".join(IMPLS),
                    help=f"comma list of implementations to measure (default {','.join(IMPLS)}); a target is "
                         "reported when both of its implementations are measured")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("--resident-of", metavar="IMPL", help=argparse.SUPPRESS)  # the fresh process of one measurement
    args = ap.parse_args(argv)
    if args.resident_of:
        print(json.dumps(resident_growth(args.resident_of, args.L, args.causal, args.threads)))
        return 0
    impls = tuple(i.strip() for i in args.impls.split(",") if i.strip())
    load_before = os.getloadavg()
    if args.json:
        found = from_json(json.loads(Path(args.json).read_text()), args.L, args.causal, impls)
    else:
        found = measure(args.L, args.threads, args.causal, args.rounds, impls)
    ok = report(found, args.L, args.causal, None if args.json else load_before)
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
