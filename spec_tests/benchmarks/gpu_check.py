"""The GPU checks, in one run of under five minutes: flash-attn, tests, then benchmarks, as JSON.

    python spec_tests/benchmarks/gpu_check.py                      # writes gpu_check.json in the current folder
    python spec_tests/benchmarks/gpu_check.py --out $OUT/gpu.json --quick
    python spec_tests/benchmarks/gpu_check.py --dry-run --out /tmp/gpu.json   # no GPU: the parts a CPU can check
    cp gpu_check.json docs/assets/benchmarks/ && python -m docs_gen   # the GPU rows of docs/benchmarks.md

0. flash-attn: when it does not import, one `pip install flash-attn` within --install-timeout
   seconds (a prebuilt wheel or nothing: no time to compile it); --no-install skips it.

1. Tests: the spec's claims about flash kernels (EFF-1, EFF-2, EFF-3, PREC-1, MASK-6) for the GPU
   implementations torch_sdpa_cuda (PyTorch's flash backend, forced), flash_attn_cuda (the
   flash-attn package, when it imports) and triton_flash (our Triton kernel, compiled), in one
   pytest run with --spec-report; each claim's status per implementation goes into the JSON.
2. Benchmarks: SDPA forward, B=4, H=16, d=64 and 128, L = 1024 .. 16384, causal and not, in
   bfloat16 and float16, timed with CUDA events (median of several launches after warm-up);
   TFLOP/s = 4 B H L^2 d (halved when causal) / time, and its percentage of the GPU's dense
   bf16/fp16 peak (H200: about 790 TFLOP/s; --peak-tflops to change it). Peak extra memory
   by torch.cuda.max_memory_allocated.

It needs a CUDA GPU, PyTorch with CUDA and Triton; flash-attn is optional. The phases share a
budget (--budget, 280 s by default): each gets its own limit or what is left, whichever is less,
and the JSON is written after every phase, so that a run cut short keeps what it measured. The
JSON (schema 1) is checked by docs_gen.benchmarks.validate_gpu before it is written.

--dry-run needs neither a GPU nor PyTorch: it parses the arguments, builds a sample result with
the same row builder as the real run (its numbers made up, marked "sample": true), checks it
against the schema and renders the page's GPU rows from it. CI runs it (tests/test_gpu_check.py),
so that this script cannot rot on machines without a GPU; see README.md, "Benchmarks".
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

GPU_IMPLS = ("torch_sdpa_cuda", "flash_attn_cuda", "triton_flash")
CLAIMS = "EFF-1,EFF-2,EFF-3,PREC-1,MASK-6"
H200_PEAK_TFLOPS = 790.0  # dense bf16/fp16 tensor-core peak of an H200 (SXM), about
SCHEMA = 1
B, H = 4, 16
DTYPES, HEAD_DIMS = ("bfloat16", "float16"), (64, 128)
LENGTHS, QUICK_LENGTHS = (1024, 4096, 8192, 16384), (1024, 4096)


def commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def new_result(peak_tflops: float) -> dict:
    return {"schema": SCHEMA, "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "commit": commit(), "peak_tflops": peak_tflops, "environment": {}, "benchmarks": []}


def bench_row(impl: str, dtype: str, L: int, d: int, causal: bool, seconds: float | None = None,
              peak_bytes: int | None = None, peak_tflops: float = H200_PEAK_TFLOPS, error: str | None = None) -> dict:
    """One benchmark row of the JSON: the case, and its time, TFLOP/s, % of peak and memory (or its error)."""
    flops = 4.0 * B * H * L * L * d / (2.0 if causal else 1.0)
    row = {"impl": impl, "dtype": dtype, "B": B, "H": H, "L": L, "d": d, "causal": causal, "flops": flops}
    if error is not None:
        row["error"] = error[:500]
    else:
        tflops = flops / seconds / 1e12
        row.update(seconds=seconds, tflops=round(tflops, 2), percent_of_peak=round(100 * tflops / peak_tflops, 1),
                   peak_bytes=int(peak_bytes))
    return row


def install_flash_attn(timeout: float) -> dict:
    """pip install flash-attn when it does not import, within timeout seconds; what happened."""
    try:
        __import__("flash_attn")
        return {"attempted": False, "reason": "flash_attn imports already"}
    except Exception:  # noqa: BLE001 - any import failure means: try to install
        pass
    cmd = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--prefer-binary", "flash-attn"]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=max(1.0, timeout))
        ok, tail = proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]
    except subprocess.TimeoutExpired:
        ok, tail = False, f"pip ran past {timeout:.0f} s (no prebuilt wheel: compiling takes far longer)"
    return {"attempted": True, "installed": ok, "seconds": round(time.perf_counter() - start, 1), "output_tail": tail}


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
    for dtype in DTYPES:
        for d in HEAD_DIMS:
            for L in QUICK_LENGTHS if quick else LENGTHS:
                for causal in (False, True):
                    if time.perf_counter() - started > budget_s:
                        rows.append({"skipped": f"benchmark time budget of {budget_s:.0f} s spent"})
                        return rows
                    g = torch.Generator(device="cuda").manual_seed(L + d)
                    q, k, v = (torch.randn(B, H, L, d, device="cuda", dtype=getattr(torch, dtype), generator=g)
                               for _ in range(3))
                    for impl in impls:
                        if dtype not in impl.dtypes:
                            continue
                        fn = impl.module.scaled_dot_product_attention
                        try:
                            seconds = _time_cuda(lambda: fn(q, k, v, is_causal=causal), warmup=3,
                                                 reps=5 if L >= 8192 else 10)
                            torch.cuda.synchronize()
                            torch.cuda.reset_peak_memory_stats()
                            before = torch.cuda.memory_allocated()
                            fn(q, k, v, is_causal=causal)
                            torch.cuda.synchronize()
                            row = bench_row(impl.name, dtype, L, d, causal, seconds,
                                            torch.cuda.max_memory_allocated() - before, peak_tflops)
                        except Exception as exc:  # noqa: BLE001 - one failing case must not lose the others
                            row = bench_row(impl.name, dtype, L, d, causal, error=f"{type(exc).__name__}: {exc}")
                        rows.append(row)
                        print(json.dumps(row), flush=True)
                    del q, k, v
                    torch.cuda.empty_cache()
    return rows


def sample_result(peak_tflops: float) -> dict:
    """What a run writes, with made-up numbers (marked sample), built by the same functions."""
    result = new_result(peak_tflops)
    result["sample"] = True
    result["environment"] = {"python": platform.python_version(), "torch": "sample", "cuda": "sample",
                             "gpu": "sample GPU (dry run)", "triton": "sample", "flash_attn": "unavailable: sample"}
    result["flash_attn_install"] = {"attempted": False, "reason": "dry run"}
    result["tests"] = {"command": "pytest (dry run: not run)", "exit_code": 0, "seconds": 0.0,
                       "claims": {c: {i: ("pass" if i != "flash_attn_cuda" else "unavailable") for i in GPU_IMPLS}
                                  for c in CLAIMS.split(",")},
                       "implementations": {}, "output_tail": ""}
    rows = [{"impl": "flash_attn_cuda", "unavailable": "sample: flash_attn does not import"}]
    for n, impl in enumerate(("torch_sdpa_cuda", "triton_flash")):
        for L in QUICK_LENGTHS:
            for causal in (False, True):
                seconds = (1.0 + n) * 4.0 * B * H * L * L * 64 / (2.0 if causal else 1.0) / 400e12
                rows.append(bench_row(impl, "bfloat16", L, 64, causal, seconds, 3 * B * H * L * 64 * 2, peak_tflops))
    rows.append(bench_row("triton_flash", "float16", 1024, 128, False, error="sample error: what a failed case shows"))
    result["benchmarks"] = rows
    return result


def check_and_write(result: dict, out: Path) -> list[str]:
    """Validate the result against the schema (docs_gen.benchmarks.validate_gpu), then write it; the problems."""
    from docs_gen.benchmarks import validate_gpu

    problems = validate_gpu(result)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    for problem in problems:
        print(f"gpu_check: schema: {problem}", file=sys.stderr)
    return problems


def dry_run(args) -> int:
    from docs_gen.benchmarks import gpu_section

    result = sample_result(args.peak_tflops)
    problems = check_and_write(result, args.out)
    page = "\n".join(gpu_section(result))
    print(page)
    if problems or "| `triton_flash` |" not in page:
        print("gpu_check: dry run FAILED", file=sys.stderr)
        return 1
    print(f"gpu_check: dry run ok: wrote the sample {args.out}; budgets: install {args.install_timeout:.0f} s, "
          f"tests {args.test_timeout} s, benchmarks {args.bench_budget:.0f} s, all within {args.budget:.0f} s")
    return 0


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    ap.add_argument("--quick", action="store_true", help="L = 1024 and 4096 only")
    ap.add_argument("--peak-tflops", type=float, default=H200_PEAK_TFLOPS)
    ap.add_argument("--budget", type=float, default=280.0, help="seconds for everything (default 280)")
    ap.add_argument("--install-timeout", type=float, default=40.0, help="seconds for pip install flash-attn")
    ap.add_argument("--no-install", action="store_true", help="do not try to install flash-attn")
    ap.add_argument("--test-timeout", type=int, default=140, help="seconds for the test run")
    ap.add_argument("--bench-budget", type=float, default=80.0, help="seconds for the benchmarks")
    ap.add_argument("--skip-tests", action="store_true")
    ap.add_argument("--dry-run", action="store_true", help="no GPU: check the arguments, the JSON schema and the "
                                                          "page's GPU rows on a sample")
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    for name in ("budget", "install_timeout", "test_timeout", "bench_budget", "peak_tflops"):
        if getattr(args, name) <= 0:
            parser().error(f"--{name.replace('_', '-')} must be positive, got {getattr(args, name)}")
    if args.dry_run:
        return dry_run(args)
    deadline = time.perf_counter() + args.budget

    def left(limit: float) -> float:
        return max(1.0, min(limit, deadline - time.perf_counter()))

    import torch

    if not torch.cuda.is_available():
        print("gpu_check: torch sees no CUDA GPU; nothing to check (--dry-run checks what a CPU can)", file=sys.stderr)
        return 2
    result = new_result(args.peak_tflops)
    if not args.no_install:
        result["flash_attn_install"] = install_flash_attn(left(args.install_timeout))
        print(json.dumps({k: v for k, v in result["flash_attn_install"].items() if k != "output_tail"}), flush=True)
    result["environment"] = environment()
    print(json.dumps(result["environment"]), flush=True)
    check_and_write(result, args.out)
    if not args.skip_tests:
        result["tests"] = run_tests(int(left(args.test_timeout)))
        print(json.dumps({k: v for k, v in result["tests"].items() if k != "output_tail"}, indent=1), flush=True)
        check_and_write(result, args.out)
    result["benchmarks"] = run_benchmarks(args.quick, args.peak_tflops, left(args.bench_budget))
    problems = check_and_write(result, args.out)
    print(f"gpu_check: wrote {args.out}" + (f" ({len(problems)} schema problems)" if problems else ""))
    tests_ok = args.skip_tests or result["tests"]["exit_code"] == 0
    return 0 if tests_ok and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
