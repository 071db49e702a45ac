"""Issue 3's performance targets, as ratios measured side by side in one run.

    python -m spec_tests.benchmarks.ratios                    # measure now, at L = 4096, all cores
    python -m spec_tests.benchmarks.ratios --threads 1 --L 2048 --rounds 7
    python -m spec_tests.benchmarks.ratios build/sweep.json   # from a saved bench_sweep.py run instead

Targets, on a CPU, at L = 4096 (B=1, H=8, d=64, float32, no mask):
  torch_chunked  >= 0.8x the throughput of PyTorch's own F.scaled_dot_product_attention (torch_sdpa),
                 with peak extra memory <= 2x its peak;
  numpy_chunked  >= 1.5x faster than the naive NumPy path (numpy_fast, which builds the L x L matrix),
                 with peak extra memory <= 1/20 of its peak.

Measuring now, the four implementations take turns: each round calls each of them once, so
that a burst of other work on a shared machine slows all four alike, and each one's time is
its fastest round. Inputs are converted before timing; peak extra memory is measured on one
more call (spec_tests/harness/memory.py), as in the benchmark suite. The report prints the
load average it ran under. From a saved pytest-benchmark JSON, each case's fastest round is used.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

IMPLS = ("torch_chunked", "torch_sdpa", "numpy_chunked", "numpy_fast")
# (what, numerator impl, denominator impl, quantity, target, "min" = at least / "max" = at most)
TARGETS = [
    ("throughput torch_chunked / torch_sdpa", "torch_chunked", "torch_sdpa", "gflops", 0.8, "min"),
    ("peak memory torch_chunked / torch_sdpa", "torch_chunked", "torch_sdpa", "peak_bytes", 2.0, "max"),
    ("speed-up numpy_chunked over numpy_fast", "numpy_fast", "numpy_chunked", "seconds", 1.5, "min"),
    ("peak memory numpy_chunked / numpy_fast", "numpy_chunked", "numpy_fast", "peak_bytes", 1 / 20, "max"),
]
B, H, D_HEAD = 1, 8, 64


def flops(L: int, causal: bool) -> float:
    return 4.0 * B * H * L * L * D_HEAD / (2.0 if causal else 1.0)


def measure(L: int, threads: int, causal: bool, rounds: int) -> dict:
    """impl -> {seconds (fastest round), gflops, peak_bytes, threads, rounds}, the four taking turns."""
    from spec_tests.benchmarks.conftest import thread_limits
    from spec_tests.harness import loader, memory
    from spec_tests.harness.strategies import normal
    from spec_tests.harness.subject import Subject

    q, k, v = (normal(10 + i, (B, H, L, D_HEAD)) for i in range(3))
    calls = {}
    for name in IMPLS:
        impl = loader.load(name)
        if impl.unavailable:
            sys.exit(f"{name} is unavailable here: {impl.unavailable}")
        subject = Subject(impl, "float32")
        fn = subject.function("scaled_dot_product_attention")
        args = subject.native((q, k, v))
        calls[name] = (subject, lambda fn=fn, args=args: fn(*args, is_causal=causal))
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
                               threads=threads, rounds=rounds, median=float(np.median(times[name])))
    return found


def from_json(data: dict, L: int, causal: bool) -> dict:
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
    missing = [i for i in IMPLS if i not in found]
    if missing:
        sys.exit(f"no sweep result at L={L} for {missing} (found {sorted(found)})")
    return found


def report(found: dict, L: int, causal: bool) -> bool:
    threads = sorted({found[i]["threads"] for i in IMPLS})
    print(f"SDPA forward, B={B} H={H} L={L} d={D_HEAD} float32{' causal' if causal else ''}, threads {threads}, "
          f"load average {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
    print(f"  {'impl':<15}{'fastest s':>10}{'median s':>10}{'GFLOP/s':>10}{'peak MiB':>11}{'rounds':>8}")
    for i in IMPLS:
        c = found[i]
        print(f"  {i:<15}{c['seconds']:>10.3f}{c['median']:>10.3f}{c['gflops']:>10.2f}"
              f"{c['peak_bytes'] / 2**20:>11.1f}{c['rounds']:>8}")
    ok_all = True
    for what, num, den, key, target, kind in TARGETS:
        ratio = found[num][key] / found[den][key]
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
    ap.add_argument("--rounds", type=int, default=5, help="rounds in which each implementation runs once (default 5)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args(argv)
    if args.json:
        found = from_json(json.loads(Path(args.json).read_text()), args.L, args.causal)
    else:
        found = measure(args.L, args.threads, args.causal, args.rounds)
    ok = report(found, args.L, args.causal)
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
