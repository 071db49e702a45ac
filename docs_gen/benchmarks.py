"""docs/benchmarks.md and its plots, from a pytest-benchmark `--benchmark-json` file.

Each benchmark's `extra_info` carries (spec_tests/benchmarks/): impl, op ("sdpa" | "mha" | "layer_norm"),
dtype, B, H, L, d, causal, flops, gflops, peak_bytes. Benchmarks that share op, dtype, causal,
B, H and d form one configuration: a table, a plot of time against L and one of peak memory
against L (log-log), each line with its fitted exponent (the slope of log y against log L).
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


@dataclass
class Point:
    impl: str
    L: int
    median: float  # seconds
    gflops: float | None
    peak_bytes: float | None
    rounds: int
    name: str


SHAPE_KEYS = ("B", "H", "d", "D")  # what a configuration fixes besides L (extra_info names)


def _config_key(ei: dict) -> tuple:
    return (ei.get("op", "?"), ei.get("dtype", "?"), bool(ei.get("causal", False)), ei.get("device", "cpu"),
            *(ei.get(k) for k in SHAPE_KEYS))


def _config_title(key: tuple) -> str:
    op, dtype, causal, device, *shape = key
    parts = [dtype] + [f"{n}={v}" for n, v in zip(SHAPE_KEYS, shape) if v is not None]
    return ", ".join(parts) + ("" if device == "cpu" else f", {device}") + (", causal" if causal else "")


def _slug(key: tuple) -> str:
    op, dtype, causal, device, *shape = key
    dims = [f"{n}{v}" for n, v in zip(SHAPE_KEYS, shape) if v is not None]
    return "-".join([op, dtype, *dims, device, "causal" if causal else "full"])


def points_by_config(data: dict) -> dict[tuple, list[Point]]:
    grouped: dict[tuple, list[Point]] = defaultdict(list)
    for b in data.get("benchmarks", []):
        ei = b.get("extra_info") or {}
        if "impl" not in ei or "L" not in ei:
            continue
        median = float(b["stats"]["median"])
        flops = ei.get("flops")
        gflops = flops / median / 1e9 if flops and median > 0 else ei.get("gflops")
        peak = ei.get("peak_bytes")
        grouped[_config_key(ei)].append(Point(str(ei["impl"]), int(ei["L"]), median, gflops,
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


def plot(points: list[Point], metric: str, title: str, path: Path) -> bool:
    """A log-log plot of `metric` ("time" or "memory") against L, one line per implementation."""
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
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length L")
    ax.set_ylabel("median time (ms)" if metric == "time" else "peak memory (MiB)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    return True


def render(data: dict, assets: Path, assets_rel: str, source: str, command: str | None = None) -> str:
    machine = data.get("machine_info", {})
    cpu = machine.get("cpu", {})
    commit = data.get("commit_info", {})
    out = [GENERATED_NOTE.format(source=source), "", "# Benchmarks", ""]
    out += ["Speed and memory are measured here, not asserted in the tests.",
            "Each number is pytest-benchmark's median over its rounds; GFLOP/s counts the forward pass's",
            "floating-point operations (for attention `4·B·H·L_q·L_k·d`, halved for causal) over that median;",
            "peak memory is the extra memory the call allocated at its peak, as the benchmark measured it.",
            "Plots are log-log: a line of slope 2 grows as L², of slope 1 as L. The fitted exponent is the",
            "least-squares slope over all lengths measured, so fixed overheads at small L pull it below",
            "the asymptotic one. Timings from a shared machine are noisy: compare implementations within",
            "one run (ratios), not across runs.", ""]
    out += ['!!! abstract "This run"', ""]
    out.append(f"    - **Date:** {data.get('datetime', '?')}")
    if command:
        out.append(f"    - **Command:** `{command}`")
    out.append(f"    - **Machine:** {text(cpu.get('brand_raw', machine.get('processor', '?')))}, "
               f"{cpu.get('count', '?')} CPUs, {machine.get('system', '?')} {text(machine.get('release', ''))}")
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
    if commit.get("id"):
        out.append(f"    - **Commit:** `{commit['id'][:12]}`" + (" (with uncommitted changes)" if commit.get("dirty") else ""))
    out.append("")
    configs = points_by_config(data)
    if not configs:
        out += ["No benchmark in this file carries the `extra_info` the tables need.", ""]
        return "\n".join(out)
    by_op: dict[str, list[tuple]] = defaultdict(list)
    for key in configs:
        by_op[key[0]].append(key)
    for op, keys in by_op.items():
        out += [f"## {OPS.get(op, op)}", ""]
        for key in keys:
            points = configs[key]
            title = f"{OPS.get(op, op)}: {_config_title(key)}"
            out += [f"### {_config_title(key)}", ""]
            slug = _slug(key)
            for metric in ("time", "memory"):
                name = f"{slug}-{metric}.svg"
                if plot(points, metric, title, assets / name):
                    what = "median time" if metric == "time" else "peak memory"
                    out += [f"![{what} against L, log-log: {text(title)}]({assets_rel}/{name})", ""]
            out += ["| implementation | time exponent | memory exponent | lengths |", "| --- | --- | --- | --- |"]
            for impl, ps in _series(points).items():
                t = fit_exponent([p.L for p in ps], [p.median for p in ps])
                m = fit_exponent([p.L for p in ps], [p.peak_bytes for p in ps])
                Ls = sorted({p.L for p in ps})
                out.append(f"| `{impl}` | {_exp(t)} | {_exp(m)} | {Ls[0]}..{Ls[-1]} ({len(Ls)}) |")
            out += ["", "| L | implementation | median time | GFLOP/s | peak memory | rounds |",
                    "| ---: | --- | ---: | ---: | ---: | ---: |"]
            for p in sorted(points, key=lambda p: (p.L, p.impl)):
                g = f"{p.gflops:.3g}" if p.gflops is not None and math.isfinite(p.gflops) else "-"
                out.append(f"| {p.L} | `{p.impl}` | {fmt_time(p.median)} | {g} | {fmt_bytes(p.peak_bytes)} | {p.rounds} |")
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def _exp(x: float | None) -> str:
    return f"L^{x:.2f}".replace("L^", "L<sup>") + "</sup>" if x is not None else "-"


def write(json_path: Path, page: Path, assets: Path, command: str | None = None) -> Path:
    data = json.loads(json_path.read_text(encoding="utf-8"))
    for old in assets.glob("*.svg"):  # plots of configurations no longer measured must not linger
        old.unlink()
    rel = assets.relative_to(page.parent).as_posix()
    page.write_text(render(data, assets, rel, source=f"the pytest-benchmark JSON {json_path.name}", command=command),
                    encoding="utf-8")
    return page


def placeholder(page: Path, reason: str) -> Path:
    """The page when no benchmark run exists yet: says so, rather than showing invented numbers."""
    page.write_text("\n".join([GENERATED_NOTE.format(source="no benchmark run"), "", "# Benchmarks", "",
                               '!!! warning "No benchmark run yet"', "", f"    {reason}", ""]), encoding="utf-8")
    return page
