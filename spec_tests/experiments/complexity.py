"""EFF-5: lecture note 2 §5.1's complexity table, measured; and Performer's error against its number of features.

    | method     | lecture note 2's claim | what is held fixed as L grows                 |
    | naive      | O(L²)            | (the baseline: the L x L score matrix)        |
    | Longformer | O(L)             | window w = 32 on each side, one global token  |
    | Linformer  | O(L)             | projected length k = 64                       |
    | Performer  | O(L)             | m = 64 random features                        |
    | Reformer   | O(L log L)       | chunks of 64 after sorting, L / 64 LSH buckets |

Each method is the float64 reference in reference/ (single head, d = 32), called on inputs made
before measuring. Memory is the peak of what the call allocates (tracemalloc, which NumPy reports
every buffer to; spec_tests/harness/memory.py); its exponent is fitted to the growth of the peak
between doubling lengths, so a fixed cost does not pull it down. Time is the best of a few calls
(CPU time of this process, time.process_time; run `python -m spec_tests.experiments`, which
keeps BLAS on one thread): reported, never asserted, since a shared machine's times are not stable.

Performer: the FAVOR+ estimate's error against exact softmax attention, averaged over seeds of the
random features, for m = 16 .. 1024 features; the fitted slope of log(error) against log(m) is
-1/2 when the error falls like 1/sqrt(m). How soon that regime starts depends on |q| and |k|: the
estimator's variance grows like exp(|q|² + |k|²) (of the scaled q, k), so the table shows three
input scales.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

import numpy as np

from reference.attention import scaled_dot_product_attention
from reference.linformer import linformer_attention, linformer_projections
from reference.performer import performer_attention
from reference.reformer import lsh_rotations, reformer_attention
from reference.sliding_window import sliding_window_attention
from spec_tests.harness import memory

SEED_TABLE = {"naive": "O(L²)", "Longformer": "O(L)", "Linformer": "O(L)", "Performer": "O(L)",
              "Reformer": "O(L log L)"}
D_HEAD, WINDOW, LINFORMER_K, FEATURES, CHUNK = 32, 32, 64, 64, 64


def _method(name: str, L: int, rng: np.random.Generator):
    """fn(q, k, v) for one method at length L, its fixed parameters drawn before any measuring."""
    if name == "naive":
        return scaled_dot_product_attention
    if name == "Longformer":
        return lambda q, k, v: sliding_window_attention(q, k, v, WINDOW, global_tokens=(0,))
    if name == "Linformer":
        e, f = linformer_projections(rng, LINFORMER_K, L)
        return lambda q, k, v: linformer_attention(q, k, v, e, f)
    if name == "Performer":
        omega = rng.standard_normal((D_HEAD, FEATURES))
        return lambda q, k, v: performer_attention(q, k, v, omega)
    if name == "Reformer":
        buckets = max(2, 2 * (L // (2 * CHUNK)))  # even, about CHUNK keys each on average
        rotations = lsh_rotations(rng, D_HEAD, buckets)
        return lambda q, k, v: reformer_attention(q, k, v, rotations, chunk_size=CHUNK)
    raise ValueError(f"unknown method {name!r}")


@dataclass
class Cost:
    method: str
    lengths: list[int]
    peak_bytes: list[int]
    seconds: list[float]

    @property
    def memory_exponent(self) -> float:
        return memory.growth_exponent(self.lengths, self.peak_bytes)

    @property
    def time_exponent(self) -> float:
        return memory.fitted_exponent(self.lengths, [s * 1e9 for s in self.seconds])


def measure(name: str, lengths=(256, 512, 1024, 2048), repeats: int = 3) -> Cost:
    """Peak extra bytes and best time of one call at each length, on (L, 32) inputs."""
    peaks, seconds = [], []
    for L in lengths:
        rng = np.random.default_rng(L)
        q, k, v = (rng.standard_normal((L, D_HEAD)) for _ in range(3))
        fn = _method(name, L, rng)
        peaks.append(int(memory.peak_bytes(lambda: fn(q, k, v), "numpy")[1]))
        best = float("inf")
        for _ in range(repeats):
            start = time.process_time()
            fn(q, k, v)
            best = min(best, time.process_time() - start)
        seconds.append(best)
    return Cost(name, list(lengths), peaks, seconds)


@dataclass
class PerformerError:
    input_std: float
    features: list[int]
    error: list[float]  # mean over seeds of the RMS error against exact attention

    @property
    def slope(self) -> float:
        return float(np.polyfit(np.log(self.features), np.log(self.error), 1)[0])


def performer_error(input_std: float, features=(16, 64, 256, 1024), seeds=range(12), L: int = 32, d: int = 16,
                    inputs_seed: int = 0) -> PerformerError:
    """RMS error of FAVOR+ against exact softmax attention, averaged over `seeds` of the random features."""
    rng = np.random.default_rng(inputs_seed)
    q, k = input_std * rng.standard_normal((2, L, d))
    v = rng.standard_normal((L, d))
    exact = scaled_dot_product_attention(q, k, v)
    errors = []
    for m in features:
        rms = [np.sqrt(np.mean((performer_attention(q, k, v, np.random.default_rng(1000 + s).standard_normal((d, m)))
                                - exact) ** 2)) for s in seeds]
        errors.append(float(np.mean(rms)))
    return PerformerError(input_std, list(features), errors)


def run(lengths=(256, 512, 1024, 2048), stds=(0.3, 0.5, 1.0), seeds=range(12)):
    costs = [measure(name, lengths) for name in SEED_TABLE]
    errors = [performer_error(s, seeds=seeds) for s in stds]
    return costs, errors


def write(costs: list[Cost], errors: list[PerformerError], out_dir) -> None:
    """docs/generated/efficient_complexity.{txt,json,svg} and docs/generated/performer_error.txt."""
    from spec_tests.experiments import pyplot, save_svg

    lengths = costs[0].lengths
    lines = ["| method | lecture note 2's complexity | fitted memory exponent | fitted time exponent | "
             f"peak memory at L = {lengths[0]} → {lengths[-1]} | time at L = {lengths[-1]} |",
             "| --- | --- | --- | --- | --- | --- |"]
    for c in costs:
        lines.append(f"| {c.method} | {SEED_TABLE[c.method]} | {c.memory_exponent:.2f} | {c.time_exponent:.2f} | "
                     f"{c.peak_bytes[0] / 2**20:.2f} → {c.peak_bytes[-1] / 2**20:.2f} MiB | "
                     f"{c.seconds[-1] * 1e3:.1f} ms |")
    caption = (f"\nFloat64 reference code (reference/), one head, d = {D_HEAD}, L = {', '.join(map(str, lengths))}; "
               f"Longformer w = {WINDOW} + 1 global token, Linformer k = {LINFORMER_K}, Performer m = {FEATURES}, "
               f"Reformer chunks of {CHUNK} and L / {CHUNK} buckets. Exponents are slopes on log-log axes; memory's is "
               "fitted to the growth between doubling lengths (spec_tests/harness/memory.py). Times come from one "
               "shared CPU (CPU time, BLAS on one thread) and are indicative only. Produced by `python -m spec_tests.experiments` "
               "(spec_tests/experiments/complexity.py).\n")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "efficient_complexity.txt").write_text("\n".join(lines) + "\n" + caption)
    perf = ["| input std of q, k | features m | RMS error against exact attention | fitted slope "
            "(−0.5 is 1/√m) |", "| --- | --- | --- | --- |"]
    for e in errors:
        perf.append(f"| {e.input_std} | {', '.join(map(str, e.features))} | "
                    f"{', '.join(f'{x:.4f}' for x in e.error)} | {e.slope:.2f} |")
    perf.append("\nd = 16, L = 32, the error averaged over 12 draws of the features. Produced by "
                "`python -m spec_tests.experiments` (spec_tests/experiments/complexity.py).\n")
    (out_dir / "performer_error.txt").write_text("\n".join(perf) + "\n")
    (out_dir / "efficient_complexity.json").write_text(json.dumps(
        {"costs": [dict(asdict(c), memory_exponent=c.memory_exponent, time_exponent=c.time_exponent) for c in costs],
         "performer": [dict(asdict(e), slope=e.slope) for e in errors]}, indent=1) + "\n")

    plot_costs(costs, out_dir / "efficient_complexity.svg")


def plot_costs(costs: list[Cost], path) -> None:
    """Peak memory and time against L, log-log, one line per method; x ticks at the lengths measured, labelled plainly.

    The x axis is in base 2 with a tick at each measured length only (256, 512, ...): base-10
    minor ticks (2×10², 3×10², ...) crowd each other into overlapping labels.
    """
    from matplotlib.ticker import NullLocator

    from spec_tests.experiments import pyplot, save_svg

    plt = pyplot()
    lengths = costs[0].lengths
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for c in costs:
        axes[0].loglog(c.lengths, np.array(c.peak_bytes) / 2**20, marker="o", markersize=3, label=c.method)
        axes[1].loglog(c.lengths, np.array(c.seconds) * 1e3, marker="o", markersize=3, label=c.method)
    axes[0].set_ylabel("peak extra memory (MiB)")
    axes[1].set_ylabel("time per call (ms)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths)
        ax.set_xticklabels([str(L) for L in lengths])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("sequence length L")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    save_svg(fig, path)
    plt.close(fig)
