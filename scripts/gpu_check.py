"""The GPU checks of issue 3, in one run of under five minutes: tests, then benchmarks, as JSON.

    python scripts/gpu_check.py                      # writes gpu_check.json in the current folder
    python scripts/gpu_check.py --out $OUT/gpu.json --quick

1. Tests: the spec's claims about flash kernels (EFF-1, EFF-2, EFF-3, PREC-1, MASK-6) for the GPU
   implementations torch_sdpa_cuda (PyTorch's flash backend, forced), flash_attn_cuda (the
   flash-attn package, when it imports) and triton_flash (our Triton kernel, compiled), in one
   pytest run with --spec-report; each claim's status per implementation goes into the JSON.
2. Benchmarks: SDPA forward, B=4, H=16, d=64 and 128, L = 1024 .. 16384, causal and not, in
   bfloat16 and float16, timed with CUDA events (median of several launches after warm-up);
   TFLOP/s = 4 B H L^2 d (halved when causal) / time, and its percentage of the GPU's dense
   bf16/fp16 peak (H200: about 790 TFLOP/s; --peak-tflops to change it). Peak extra memory
   by torch.cuda.max_memory_allocated.

It needs a CUDA GPU, PyTorch with CUDA and Triton; flash-attn is optional. Nothing here runs
in CI (there is no GPU there); see README.md, "Benchmarks".
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GPU_IMPLS = ("torch_sdpa_cuda", "flash_attn_cuda", "triton_flash")
CLAIMS = "EFF-1,EFF-2,EFF-3,PREC-1,MASK-6"
H200_PEAK_TFLOPS = 790.0  # dense bf16/fp16 tensor-core peak of an H200 (SXM), about


def environment() -> dict:
    import torch

    env = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    for name in ("triton", "flash_attn"):
        try:
            env[name] = __import__(name).__version__
        except Exception as exc:  # noqa: BLE001 - record why, go on
            env[name] = f"unavailable: {type(exc).__name__}: {exc}"
    return env


def run_tests(timeout: int) -> dict:
    """The flash claims for the GPU implementations, in one pytest run; claim statuses per implementation."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-claim-summary",
               "--impl", ",".join(GPU_IMPLS), "--claim", CLAIMS, "--spec-report", str(report)]
        env = dict(os.environ, CI="1")  # the derandomised Hypothesis profile
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
            code, tail = proc.returncode, (proc.stdout + proc.stderr)[-6000:]
        except subprocess.TimeoutExpired as exc:
            code, tail = "timeout", f"pytest ran past {timeout} s\n" + str(exc.stdout or "")[-4000:]
        seconds = time.perf_counter() - start
        data = json.loads(report.read_text()) if report.exists() else {}
    return {"command": " ".join(cmd[1:]), "exit_code": code, "seconds": round(seconds, 1),
            "claims": data.get("claims", {}), "implementations": data.get("implementations", {}),
            "output_tail": tail}


def _time_cuda(fn, warmup: int, reps: int) -> float:
    """Median seconds of fn() over reps launches, timed with CUDA events after warmup launches."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    return times[len(times) // 2]


def run_benchmarks(quick: bool, peak_tflops: float, budget_s: float) -> list[dict]:
    import torch

    from spec_tests.harness import loader

    rows, started = [], time.perf_counter()
    impls = []
    for name in GPU_IMPLS:
        impl = loader.load(name)
        if impl.unavailable:
            rows.append({"impl": name, "unavailable": impl.unavailable})
        else:
            impls.append(impl)
    B, H = 4, 16
    lengths = [1024, 4096] if quick else [1024, 4096, 8192, 16384]
    for dtype in ("bfloat16", "float16"):
        for d in (64, 128):
            for L in lengths:
                for causal in (False, True):
                    if time.perf_counter() - started > budget_s:
                        rows.append({"skipped": f"benchmark time budget of {budget_s:.0f} s spent"})
                        return rows
                    g = torch.Generator(device="cuda").manual_seed(L + d)
                    q, k, v = (torch.randn(B, H, L, d, device="cuda", dtype=getattr(torch, dtype), generator=g)
                               for _ in range(3))
                    flops = 4.0 * B * H * L * L * d / (2.0 if causal else 1.0)
                    for impl in impls:
                        if dtype not in impl.dtypes:
                            continue
                        fn = impl.module.scaled_dot_product_attention
                        row = {"impl": impl.name, "dtype": dtype, "B": B, "H": H, "L": L, "d": d, "causal": causal,
                               "flops": flops}
                        try:
                            seconds = _time_cuda(lambda: fn(q, k, v, is_causal=causal), warmup=3,
                                                 reps=5 if L >= 8192 else 10)
                            torch.cuda.synchronize()
                            torch.cuda.reset_peak_memory_stats()
                            before = torch.cuda.memory_allocated()
                            fn(q, k, v, is_causal=causal)
                            torch.cuda.synchronize()
                            tflops = flops / seconds / 1e12
                            row.update(seconds=seconds, tflops=round(tflops, 2),
                                       percent_of_peak=round(100 * tflops / peak_tflops, 1),
                                       peak_bytes=int(torch.cuda.max_memory_allocated() - before))
                        except Exception as exc:  # noqa: BLE001 - one failing case must not lose the others
                            row["error"] = f"{type(exc).__name__}: {exc}"[:500]
                        rows.append(row)
                        print(json.dumps(row), flush=True)
                    del q, k, v
                    torch.cuda.empty_cache()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    ap.add_argument("--quick", action="store_true", help="L = 1024 and 4096 only")
    ap.add_argument("--peak-tflops", type=float, default=H200_PEAK_TFLOPS)
    ap.add_argument("--test-timeout", type=int, default=150, help="seconds for the test run")
    ap.add_argument("--bench-budget", type=float, default=100.0, help="seconds for the benchmarks")
    ap.add_argument("--skip-tests", action="store_true")
    args = ap.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("gpu_check: torch sees no CUDA GPU; nothing to check", file=sys.stderr)
        return 2
    result = {"environment": environment(), "peak_tflops": args.peak_tflops}
    print(json.dumps(result["environment"]), flush=True)
    if not args.skip_tests:
        result["tests"] = run_tests(args.test_timeout)
        print(json.dumps({k: v for k, v in result["tests"].items() if k != "output_tail"}, indent=1), flush=True)
    result["benchmarks"] = run_benchmarks(args.quick, args.peak_tflops, args.bench_budget)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"gpu_check: wrote {args.out}")
    tests_ok = args.skip_tests or result["tests"]["exit_code"] == 0
    return 0 if tests_ok else 1


if __name__ == "__main__":
    sys.exit(main())
