"""docs/benchmarks.md and its plots, from a pytest-benchmark `--benchmark-json` file (and a GPU run's JSON).

Each benchmark's `extra_info` carries (spec_tests/benchmarks/): impl, op ("sdpa" | "mha" | "layer_norm"),
dtype, B, H, L, d, D, causal, flops, gflops, peak_bytes, and `axis`: the size a group varies, "L"
(the default) or "D" (LayerNorm's width). Benchmarks that share everything but that size form one
configuration: a table, a plot of time against it and one of peak memory (log-log), each line with
its fitted exponent (the slope of log y against log size), and beside each row its ratio to the
configuration's baseline at the same size (BASELINES: PyTorch's own function).

GPU rows come from the JSON spec_tests/benchmarks/gpu_check.py writes, committed at docs/assets/benchmarks/gpu_check.json
(GPU_JSON); without it the page says that no GPU run has been made.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from docs_gen import GENERATED_NOTE
from docs_gen.claims_pages import text

OPS = {"sdpa": "Scaled dot-product attention", "mha": "Multi-head attention", "layer_norm": "LayerNorm"}
# op -> (the implementation every row is compared with, what it runs)
BASELINES = {
    "sdpa": ("torch_sdpa", "PyTorch's `F.scaled_dot_product_attention`"),
    "mha": ("torch_sdpa", "PyTorch's `F.scaled_dot_product_attention` inside torch_sdpa's multi-head attention"),
    "layer_norm": ("torch_sdpa", "PyTorch's `F.layer_norm`"),
}
AXES = {"L": "sequence length L", "D": "width D"}
GPU_JSON = Path(__file__).resolve().parents[1] / "docs" / "assets" / "benchmarks" / "gpu_check.json"


@dataclass
class Point:
    impl: str
    L: int  # the size the configuration varies: the length L, or the width D (axis "D")
    median: float  # seconds: the fastest round (pytest-benchmark's min; its median where no min is recorded)
    gflops: float | None
    peak_bytes: float | None
    rounds: int
    name: str


SHAPE_KEYS = ("B", "H", "L", "d", "D")  # what a configuration fixes besides its axis (extra_info names)


def _axis(ei: dict) -> str:
    return ei.get("axis") or "L"


def _config_key(ei: dict) -> tuple:
    axis = _axis(ei)
    return (ei.get("op", "?"), ei.get("dtype", "?"), bool(ei.get("causal", False)), ei.get("device", "cpu"), axis,
            *(None if k == axis else ei.get(k) for k in SHAPE_KEYS))


def _config_title(key: tuple) -> str:
    op, dtype, causal, device, axis, *shape = key
    parts = [dtype] + [f"{n}={v}" for n, v in zip(SHAPE_KEYS, shape) if v is not None]
    return ", ".join(parts) + ("" if device == "cpu" else f", {device}") + (", causal" if causal else "")


def _slug(key: tuple) -> str:
    op, dtype, causal, device, axis, *shape = key
    dims = [f"{n}{v}" for n, v in zip(SHAPE_KEYS, shape) if v is not None]
    return "-".join([op, dtype, *dims, device, "causal" if causal else "full"])


def points_by_config(data: dict) -> dict[tuple, list[Point]]:
    grouped: dict[tuple, list[Point]] = defaultdict(list)
    for b in data.get("benchmarks", []):
        ei = b.get("extra_info") or {}
        if "impl" not in ei or ei.get(_axis(ei)) is None:
            continue
        median = float(b["stats"].get("min", b["stats"]["median"]))  # the fastest round: the least disturbed
        flops = ei.get("flops")
        gflops = flops / median / 1e9 if flops and median > 0 else ei.get("gflops")
        peak = ei.get("peak_bytes")
        grouped[_config_key(ei)].append(Point(str(ei["impl"]), int(ei[_axis(ei)]), median, gflops,
                                              float(peak) if peak is not None else None,
                                              int(b["stats"].get("rounds", 0)), b.get("name", "")))
    order = list(OPS)  # sdpa, mha, layer_norm; then any other op
    return dict(sorted(grouped.items(), key=lambda kv: (order.index(kv[0][0]) if kv[0][0] in order else len(order),
                                                         tuple(str(x) for x in kv[0]))))


def fit_exponent(Ls, ys) -> float | None:
    """Slope of log y against log L (least squares); None with fewer than two distinct positive points."""
    pairs = [(L, y) for L, y in zip(Ls, ys) if y is not None and y > 0]
    if len({L for L, _ in pairs}) < 2:
        return None
    x, y = np.log([p[0] for p in pairs]), np.log([p[1] for p in pairs])
    return float(np.polyfit(x, y, 1)[0])


def fmt_time(s: float) -> str:
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= f:
            return f"{s / f:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f:
            return f"{n / f:.3g} {unit}"
    return f"{n:.0f} B"


def _series(points: list[Point]) -> dict[str, list[Point]]:
    by_impl: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        by_impl[p.impl].append(p)
    return {k: sorted(v, key=lambda p: p.L) for k, v in sorted(by_impl.items())}


def plot(points: list[Point], metric: str, title: str, path: Path, axis: str = "L") -> bool:
    """A log-log plot of `metric` ("time" or "memory") against the axis (L or D), one line per implementation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "mha-spec", "svg.fonttype": "none", "font.size": 10})
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    drawn = False
    for impl, ps in _series(points).items():
        Ls = [p.L for p in ps]
        ys = [p.median if metric == "time" else p.peak_bytes for p in ps]
        keep = [(L, y) for L, y in zip(Ls, ys) if y is not None and y > 0]
        if not keep:
            continue
        slope = fit_exponent(Ls, ys)
        label = impl + (f" (slope {slope:.2f})" if slope is not None else "")
        scale = 1e3 if metric == "time" else 1 / 2**20
        ax.plot([L for L, _ in keep], [y * scale for _, y in keep], marker="o", label=label)
        drawn = True
    if not drawn:
        plt.close(fig)
        return False
    from matplotlib.ticker import NullLocator

    sizes = sorted({p.L for p in points})
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)  # a tick at each size measured, labelled plainly (not 2^8, nor crowded minor ticks)
    ax.set_xticklabels([str(x) for x in sizes])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_yscale("log")
    ax.set_xlabel(AXES.get(axis, axis))
    ax.set_ylabel("time, fastest round (ms)" if metric == "time" else "peak memory (MiB)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return True


def _ratio(x: float | None) -> str:
    return f"{x:.2f}×" if x is not None and math.isfinite(x) else "-"


def _loads(data: dict) -> list[float]:
    return [b["extra_info"]["load_average"] for b in data.get("benchmarks", [])
            if (b.get("extra_info") or {}).get("load_average") is not None]


def _load_range(data: dict) -> str | None:
    loads = _loads(data)
    return f"{min(loads):.1f} to {max(loads):.1f}" if loads else None


def overload_warning(data: dict) -> list[str]:
    """A warning when the 1-minute load average went above the number of CPUs during the run."""
    loads, cpus = _loads(data), (data.get("machine_info", {}).get("cpu", {}) or {}).get("count")
    if not loads or not cpus or max(loads) <= cpus:
        return []
    return ['!!! warning "Measured on an overloaded machine"', "",
            f"    The load average reached {max(loads):.1f} on {cpus} CPUs during this run: other processes wanted",
            f"    {max(loads) / cpus:.0f} times the machine. The cases run one after another, so a burst of other work",
            "    slows whichever case is running then, and even a ratio within one table can be off by a large",
            "    factor. For a ratio that holds, `python -m spec_tests.benchmarks.ratios` runs the implementations",
            "    in turns, round after round, and compares their fastest rounds.", ""]


def render(data: dict, assets: Path, assets_rel: str, source: str, command: str | None = None,
           gpu: dict | None = None) -> str:
    out = [GENERATED_NOTE.format(source=source), "", "# Benchmarks", ""] + INTRO
    out += run_summary(data, command) + overload_warning(data)
    configs = points_by_config(data)
    if not configs:
        out += ["No benchmark in this file carries the `extra_info` the tables need.", ""]
    by_op: dict[str, list[tuple]] = defaultdict(list)
    for key in configs:
        by_op[key[0]].append(key)
    for op, keys in by_op.items():
        out += [f"## {OPS.get(op, op)}", ""]
        base, base_what = BASELINES.get(op, (None, None))
        if base:
            out += [f"Baseline: `{base}`, {base_what}.", ""]
        for key in keys:
            out += config_section(key, configs[key], base, assets, assets_rel)
    out += gpu_section(gpu)
    return "\n".join(out).rstrip() + "\n"


INTRO = ["Speed and memory are measured here, not asserted in the tests.",
         "Each time is the fastest of pytest-benchmark's rounds: on a shared machine other work only ever",
         "slows a round down, so the fastest is the least disturbed. GFLOP/s counts the forward pass's",
         "floating-point operations (for attention `4·B·H·L_q·L_k·d`, halved for causal) over that time;",
         "peak memory is the extra memory the call allocated at its peak, as the benchmark measured it.",
         "Plots are log-log: a line of slope 2 grows as L², of slope 1 as L. The fitted exponent is the",
         "least-squares slope over all sizes measured, so fixed overheads at small sizes pull it below",
         "the asymptotic one.", "",
         "Timings from a shared machine are noisy, and differ from run to run: compare implementations",
         "within one run, by the ratio columns. Each table names its baseline, PyTorch's own function;",
         "*speed* is the baseline's time over the implementation's at the same size (above 1: faster",
         "than the baseline), *memory* the implementation's peak over the baseline's (below 1: less).", ""]


def run_summary(data: dict, command: str | None) -> list[str]:
    """The "This run" box: date, commit, machine, load, command, versions, threads, memory method."""
    machine = data.get("machine_info", {})
    cpu = machine.get("cpu", {})
    commit = data.get("commit_info", {})
    out = ['!!! abstract "This run"', ""]
    out.append(f"    - **Date:** {data.get('datetime', '?')}")
    if commit.get("id"):
        out.append(f"    - **Commit:** `{commit['id'][:12]}`" + (" (with uncommitted changes)" if commit.get("dirty") else ""))
    out.append(f"    - **Machine:** {text(cpu.get('brand_raw', machine.get('processor', '?')))}, "
               f"{cpu.get('count', '?')} CPUs, {machine.get('system', '?')} {text(machine.get('release', ''))}")
    load = _load_range(data)
    if load:
        out.append(f"    - **Load average during the run (1 min):** {load} on {cpu.get('count', '?')} CPUs")
    if command:
        out.append(f"    - **Command:** `{command}`")
    out.append(f"    - **Python:** {machine.get('python_implementation', '')} {machine.get('python_version', '?')}, "
               f"pytest-benchmark {data.get('version', '?')}")
    threads = sorted({str(b.get("extra_info", {}).get("threads")) for b in data.get("benchmarks", [])
                      if b.get("extra_info", {}).get("threads") is not None})
    methods = sorted({b["extra_info"]["memory_method"] for b in data.get("benchmarks", [])
                      if b.get("extra_info", {}).get("memory_method")})
    if threads:
        out.append(f"    - **Threads:** {', '.join(threads)}")
    if methods:
        out.append(f"    - **Peak memory measured by:** {text('; '.join(methods))}")
    return out + [""]


def config_section(key: tuple, points: list[Point], base: str | None, assets: Path, assets_rel: str) -> list[str]:
    """One configuration (op, dtype, causal, device, fixed shape): its two plots, its exponents, its timings."""
    op, axis = key[0], key[4]
    title = f"{OPS.get(op, op)}: {_config_title(key)}"
    out = [f"### {_config_title(key)}", ""]
    slug = _slug(key)
    for metric in ("time", "memory"):
        name = f"{slug}-{metric}.svg"
        if plot(points, metric, title, assets / name, axis):
            what = "time" if metric == "time" else "peak memory"
            out += [f"![{what} against {axis}, log-log: {text(title)}]({assets_rel}/{name})", ""]
    return out + exponent_table(points, axis) + [""] + timing_table(points, axis, base)


def exponent_table(points: list[Point], axis: str) -> list[str]:
    """Each implementation's fitted time and memory exponents over the sizes it was measured at."""
    sizes_name = "lengths" if axis == "L" else "widths"
    out = [f"| implementation | time exponent | memory exponent | {sizes_name} |", "| --- | --- | --- | --- |"]
    for impl, ps in _series(points).items():
        t = fit_exponent([p.L for p in ps], [p.median for p in ps])
        m = fit_exponent([p.L for p in ps], [p.peak_bytes for p in ps])
        Ls = sorted({p.L for p in ps})
        out.append(f"| `{impl}` | {_exp(t, axis)} | {_exp(m, axis)} | {Ls[0]}..{Ls[-1]} ({len(Ls)}) |")
    return out


def timing_table(points: list[Point], axis: str, base: str | None) -> list[str]:
    """One row per (size, implementation): time, GFLOP/s, peak memory, and both against the baseline's."""
    baseline = {p.L: p for p in points if p.impl == base}
    base_col = f"`{base}`" if base else "baseline"
    out = [f"| {axis} | implementation | time | GFLOP/s | speed vs {base_col} | peak memory | "
           f"memory vs {base_col} | rounds |",
           "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for p in sorted(points, key=lambda p: (p.L, p.impl)):
        g = f"{p.gflops:.3g}" if p.gflops is not None and math.isfinite(p.gflops) else "-"
        b = baseline.get(p.L)
        speed = b.median / p.median if b is not None and p.median > 0 else None
        mem = (p.peak_bytes / b.peak_bytes if b is not None and p.peak_bytes is not None and b.peak_bytes
               else None)
        out.append(f"| {p.L} | `{p.impl}` | {fmt_time(p.median)} | {g} | {_ratio(speed)} | "
                   f"{fmt_bytes(p.peak_bytes)} | {_ratio(mem)} | {p.rounds} |")
    return out + [""]


GPU_REQUIRED = {"schema": int, "created": str, "environment": dict, "peak_tflops": (int, float), "benchmarks": list}
GPU_ROW_REQUIRED = {"impl": str, "dtype": str, "B": int, "H": int, "L": int, "d": int, "causal": bool,
                    "flops": (int, float)}
GPU_ROW_MEASURED = {"seconds": (int, float), "tflops": (int, float), "percent_of_peak": (int, float),
                    "peak_bytes": int}


def validate_gpu(result: dict) -> list[str]:
    """What is wrong with a gpu_check.py JSON (spec_tests/benchmarks/gpu_check.py writes schema 1); [] when nothing is."""
    problems = []
    if not isinstance(result, dict):
        return [f"the JSON is a {type(result).__name__}, not an object"]
    for k, t in GPU_REQUIRED.items():
        if not isinstance(result.get(k), t) or isinstance(result.get(k), bool):
            problems.append(f"{k!r} is missing or not {t}")
    if result.get("schema") not in (None, 1) and isinstance(result.get("schema"), int):
        problems.append(f"schema {result['schema']} is not 1")
    tests = result.get("tests")
    if tests is not None:
        if not isinstance(tests, dict) or not isinstance(tests.get("claims", {}), dict):
            problems.append("'tests' must be an object whose 'claims' maps claim -> implementation -> status")
        else:
            for claim, per in tests.get("claims", {}).items():
                if not isinstance(per, dict) or not all(isinstance(v, str) for v in per.values()):
                    problems.append(f"tests.claims[{claim!r}] must map implementation -> status")
    for n, row in enumerate(result.get("benchmarks") or []):
        if not isinstance(row, dict):
            problems.append(f"benchmarks[{n}] is not an object")
            continue
        if "unavailable" in row or "skipped" in row:
            continue
        for k, t in GPU_ROW_REQUIRED.items():
            if not isinstance(row.get(k), t) or (t is int and isinstance(row.get(k), bool)):
                problems.append(f"benchmarks[{n}][{k!r}] is missing or not {t}")
        if "error" not in row:
            for k, t in GPU_ROW_MEASURED.items():
                if not isinstance(row.get(k), t):
                    problems.append(f"benchmarks[{n}][{k!r}] is missing or not {t} (and no 'error' says why)")
    return problems


def gpu_section(gpu: dict | None) -> list[str]:
    """The GPU rows: the flash claims per GPU implementation, and TFLOP/s against the bf16 peak."""
    out = ["## On a GPU", ""]
    if gpu is None:
        return out + ["No GPU run yet. `python spec_tests/benchmarks/gpu_check.py --out docs/assets/benchmarks/gpu_check.json` on a",
                      "CUDA machine runs the flash claims and the GPU benchmarks (PyTorch's flash backend, flash-attn,",
                      "our Triton kernel) in under five minutes; `python -m docs_gen` then shows them here.", ""]
    problems = validate_gpu(gpu)
    if problems:
        return out + ['!!! failure "The GPU run\'s JSON does not have the expected form"', ""] + \
            [f"    - {text(p)}" for p in problems] + [""]
    env = gpu["environment"]
    sample = bool(gpu.get("sample"))
    if sample:
        out += ['!!! warning "Sample data"', "",
                "    These rows are the made-up sample of `spec_tests/benchmarks/gpu_check.py --dry-run`, not a measurement.", ""]
    out += ['!!! abstract "The GPU run"', "", f"    - **Date:** {gpu['created']}"]
    if gpu.get("commit"):
        out.append(f"    - **Commit:** `{str(gpu['commit'])[:12]}`")
    out.append(f"    - **GPU:** {text(str(env.get('gpu')))}; PyTorch {text(str(env.get('torch')))}, "
               f"CUDA {text(str(env.get('cuda')))}, Triton {text(str(env.get('triton')))}, "
               f"flash-attn {text(str(env.get('flash_attn')))}")
    out.append(f"    - **Peak used for percentages:** {gpu['peak_tflops']:g} TFLOP/s (dense bf16/fp16)")
    out.append("")
    tests = gpu.get("tests") or {}
    claims = tests.get("claims") or {}
    if claims:
        impls = sorted({i for per in claims.values() for i in per})
        out += ["| claim | " + " | ".join(f"`{i}`" for i in impls) + " |",
                "| --- |" + " --- |" * len(impls)]
        for claim in sorted(claims):
            out.append(f"| {claim} | " + " | ".join(claims[claim].get(i, "-") for i in impls) + " |")
        out += ["", f"Test run: exit code {tests.get('exit_code', '?')}, {tests.get('seconds', '?')} s.", ""]
    rows = [r for r in gpu["benchmarks"] if "impl" in r and "L" in r]
    missing = [r for r in gpu["benchmarks"] if "unavailable" in r or "skipped" in r]
    if rows:
        base = {(r["dtype"], r["d"], r["L"], r["causal"]): r for r in rows
                if r["impl"] == "torch_sdpa_cuda" and "tflops" in r}
        out += ["Baseline: `torch_sdpa_cuda`, PyTorch's `F.scaled_dot_product_attention` with the flash backend forced.",
                "", "| dtype | d | L | causal | implementation | time | TFLOP/s | % of peak | speed vs `torch_sdpa_cuda` "
                "| peak memory |", "| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for r in sorted(rows, key=lambda r: (r["dtype"], r["d"], r["causal"], r["L"], r["impl"])):
            lead = f"| {r['dtype']} | {r['d']} | {r['L']} | {'yes' if r['causal'] else 'no'} | `{r['impl']}` |"
            if "error" in r:
                out.append(f"{lead} error: {text(str(r['error']))[:120]} | | | | |")
                continue
            b = base.get((r["dtype"], r["d"], r["L"], r["causal"]))
            speed = b["seconds"] / r["seconds"] if b and r["seconds"] > 0 else None
            out.append(f"{lead} {fmt_time(r['seconds'])} | {r['tflops']:.1f} | {r['percent_of_peak']:.1f} | "
                       f"{_ratio(speed)} | {fmt_bytes(r['peak_bytes'])} |")
        out.append("")
    for r in missing:
        who = f"`{r['impl']}`: " if r.get("impl") else ""
        out.append(f"- {who}{text(str(r.get('unavailable') or r.get('skipped')))}")
    if missing:
        out.append("")
    return out


def _exp(x: float | None, axis: str = "L") -> str:
    return f"{axis}<sup>{x:.2f}</sup>" if x is not None else "-"


def load_gpu(path: Path | None = None) -> dict | None:
    path = GPU_JSON if path is None else path
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def write(json_path: Path, page: Path, assets: Path, command: str | None = None, gpu_json: Path | None = None) -> Path:
    data = json.loads(json_path.read_text(encoding="utf-8"))
    for old in assets.glob("*.svg"):  # plots of configurations no longer measured must not linger
        old.unlink()
    rel = assets.relative_to(page.parent).as_posix()
    gpu = load_gpu(gpu_json)
    source = f"the pytest-benchmark JSON {json_path.name}" + (" and the GPU run's gpu_check.json" if gpu else "")
    page.write_text(render(data, assets, rel, source=source, command=command, gpu=gpu), encoding="utf-8")
    return page


def placeholder(page: Path, reason: str) -> Path:
    """The page when no benchmark run exists yet: says so, rather than showing invented numbers."""
    page.write_text("\n".join([GENERATED_NOTE.format(source="no benchmark run"), "", "# Benchmarks", "",
                               '!!! warning "No benchmark run yet"', "", f"    {reason}", ""]), encoding="utf-8")
    return page
