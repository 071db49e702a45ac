"""Issue 3's performance targets, as ratios measured side by side in one run.

    python -m spec_tests.benchmarks.ratios                   # run the L=4096 sweep cases now, then report
    python -m spec_tests.benchmarks.ratios build/sweep.json  # report from a saved pytest-benchmark JSON
    python -m spec_tests.benchmarks.ratios --L 2048 --threads 1 --check

Targets, on a CPU, at L = 4096 (B=1, H=8, d=64, float32, no mask):
  torch_chunked  >= 0.8x the throughput of PyTorch's own F.scaled_dot_product_attention (torch_sdpa),
                 with peak extra memory <= 2x its peak;
  numpy_chunked  >= 1.5x faster than the naive NumPy path (numpy_fast, which builds the L x L matrix),
                 with peak extra memory <= 1/20 of its peak.
Times are each case's fastest round (of at least --rounds), the one least disturbed by other work;
timings on a shared machine are noisy all the same: the report prints the load average it ran under.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMPLS = ("torch_chunked", "torch_sdpa", "numpy_chunked", "numpy_fast")
# (what, numerator impl, denominator impl, quantity, target, "min" = at least / "max" = at most)
TARGETS = [
    ("throughput torch_chunked / torch_sdpa", "torch_chunked", "torch_sdpa", "gflops", 0.8, "min"),
    ("peak memory torch_chunked / torch_sdpa", "torch_chunked", "torch_sdpa", "peak_bytes", 2.0, "max"),
    ("speed-up numpy_chunked over numpy_fast", "numpy_fast", "numpy_chunked", "seconds", 1.5, "min"),
    ("peak memory numpy_chunked / numpy_fast", "numpy_chunked", "numpy_fast", "peak_bytes", 1 / 20, "max"),
]


def run_sweep(L: int, threads: int | None, causal: bool, rounds: int = 5) -> dict:
    """Run the sweep's case at length L for the four implementations in one pytest process; return its JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep.json"
        env = dict(os.environ, MHA_SPEC_BENCH_SIZE="default", MHA_SPEC_BENCH_DTYPES="float32",
                   MHA_SPEC_BENCH_MIN_ROUNDS=str(rounds))
        if threads:
            env["MHA_SPEC_BENCH_THREADS"] = str(threads)
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--no-claim-summary",
               str(ROOT / "spec_tests" / "benchmarks" / "bench_sweep.py"), "--impl", ",".join(IMPLS),
               "-k", f"L{L} and {'causal' if causal else 'full'}",
               f"--benchmark-json={out}"]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            sys.exit(f"the sweep failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
        return json.loads(out.read_text())


def cases(data: dict, L: int, causal: bool) -> dict:
    """impl -> {seconds (fastest round), gflops (from it), peak_bytes, threads, rounds} at length L."""
    found = {}
    for b in data["benchmarks"]:
        info = b.get("extra_info", {})
        if info.get("op") == "sdpa" and info.get("L") == L and info.get("causal") == causal \
                and info.get("B") == 1 and info.get("H") == 8 and info.get("d") == 64 and info.get("dtype") == "float32":
            fastest = b["stats"]["min"]  # the round least disturbed by whatever else the machine ran
            found[info["impl"]] = dict(seconds=fastest, gflops=info["flops"] / fastest / 1e9,
                                       peak_bytes=info.get("peak_bytes"), threads=info.get("threads"),
                                       rounds=b["stats"]["rounds"])
    return found


def report(data: dict, L: int, causal: bool) -> bool:
    found = cases(data, L, causal)
    missing = [i for i in IMPLS if i not in found]
    if missing:
        sys.exit(f"no sweep result at L={L} for {missing} (found {sorted(found)})")
    threads = {found[i]["threads"] for i in IMPLS}
    print(f"SDPA forward, B=1 H=8 L={L} d=64 float32{' causal' if causal else ''}, threads {threads}, "
          f"load average {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} cores")
    print(f"  {'impl':<15}{'fastest s':>10}{'GFLOP/s':>10}{'peak MiB':>11}{'rounds':>8}")
    for i in IMPLS:
        c = found[i]
        print(f"  {i:<15}{c['seconds']:>10.3f}{c['gflops']:>10.2f}{c['peak_bytes'] / 2**20:>11.1f}{c['rounds']:>8}")
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
    ap.add_argument("json", nargs="?", help="a pytest-benchmark JSON holding the sweep (default: run it now)")
    ap.add_argument("--L", type=int, default=4096)
    ap.add_argument("--causal", action="store_true", help="the causal cases instead of the full ones")
    ap.add_argument("--threads", type=int, default=None, help="MHA_SPEC_BENCH_THREADS for the run (default: all cores)")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds per case at least (default 5)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args(argv)
    data = json.loads(Path(args.json).read_text()) if args.json else run_sweep(args.L, args.threads, args.causal, args.rounds)
    ok = report(data, args.L, args.causal)
    return 1 if args.check and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
