"""docs/benchmarks.md's comparisons: a ratio column against the named baseline, and LayerNorm against its width.

Inputs are built here, so the expected ratios and exponents are known: an implementation twice
as slow as the baseline reads 0.50×, one using four times its memory 4.00×; LayerNorm's groups
vary the width D, so its plot and exponents are against D, one group per (B, L).
"""

import pytest

benchmarks = pytest.importorskip("docs_gen.benchmarks", reason="the docs generator (docs_gen/) is not importable")
pytest.importorskip("matplotlib", reason="the docs extra (matplotlib) is not installed")


def _data(rows):
    return {
        "machine_info": {"cpu": {"brand_raw": "Test CPU", "count": 2}, "system": "Linux", "release": "6",
                         "python_version": "3.11.7"},
        "commit_info": {"id": "fedcba9876543210", "dirty": False},
        "datetime": "2026-01-02T03:04:05", "version": "5.1.0",
        "benchmarks": [{"name": f"b[{ei['impl']}]", "stats": {"median": t, "rounds": 5}, "extra_info": ei}
                       for ei, t in rows],
    }


def _sdpa(impl, L, t, peak):
    return dict(impl=impl, op="sdpa", dtype="float32", B=1, H=2, L=L, d=8, D=16, causal=False,
                flops=4 * 2 * L * L * 8, peak_bytes=peak, load_average=3.5), t


def _ln(impl, D, t, peak):
    return dict(impl=impl, op="layer_norm", dtype="float32", B=2, H=None, L=64, d=None, D=D, causal=False,
                flops=8 * 2 * 64 * D, peak_bytes=peak, axis="D", load_average=1.25), t


def test_ratio_columns_against_the_named_baseline(tmp_path):
    rows = [_sdpa("torch_sdpa", L, 1e-9 * L**2, 1000 * L) for L in (128, 256, 512)]
    rows += [_sdpa("slow", L, 2e-9 * L**2, 4000 * L) for L in (128, 256, 512)]
    page = benchmarks.render(_data(rows), tmp_path, "assets", source="test")
    assert "Baseline: `torch_sdpa`, PyTorch's `F.scaled_dot_product_attention`." in page
    assert "| L | implementation | time | GFLOP/s | speed vs `torch_sdpa` | peak memory | memory vs `torch_sdpa` |" \
        in page
    for L in (128, 256, 512):
        row = next(line for line in page.splitlines() if line.startswith(f"| {L} | `slow` |"))
        assert "| 0.50× |" in row and "| 4.00× |" in row, row
        base = next(line for line in page.splitlines() if line.startswith(f"| {L} | `torch_sdpa` |"))
        assert base.count("| 1.00× |") == 2, base
    assert "**Commit:** `fedcba987654`" in page and "**Date:** 2026-01-02T03:04:05" in page and "Test CPU" in page
    assert "**Load average during the run (1 min):** 3.5 to 3.5" in page


def test_without_the_baseline_the_ratio_is_a_dash(tmp_path):
    page = benchmarks.render(_data([_sdpa("alone", L, 1e-3, 10) for L in (128, 256)]), tmp_path, "a", source="t")
    row = next(line for line in page.splitlines() if line.startswith("| 128 | `alone` |"))
    assert row.count("| - |") == 2, row


def test_layer_norm_is_plotted_against_its_width(tmp_path):
    rows = [_ln(impl, D, c * D * 1e-9, c * 4 * D) for impl, c in (("torch_sdpa", 1.0), ("mine", 3.0))
            for D in (256, 512, 1024)]
    page = benchmarks.render(_data(rows), tmp_path, "assets", source="test")
    assert "## LayerNorm" in page and "Baseline: `torch_sdpa`, PyTorch's `F.layer_norm`." in page
    assert "### float32, B=2, L=64" in page  # one group: B and L fixed, D varies
    assert sorted(p.name for p in tmp_path.glob("*.svg")) == ["layer_norm-float32-B2-L64-cpu-full-memory.svg",
                                                              "layer_norm-float32-B2-L64-cpu-full-time.svg"]
    assert "| `mine` | D<sup>1.00</sup> | D<sup>1.00</sup> | 256..1024 (3) |" in page
    assert "| D | implementation |" in page
    row = next(line for line in page.splitlines() if line.startswith("| 1024 | `mine` |"))
    assert "| 0.33× |" in row and "| 3.00× |" in row, row
    svg = (tmp_path / "layer_norm-float32-B2-L64-cpu-full-time.svg").read_text()
    assert "width D" in svg and ">1024<" in svg.replace(" ", "")


def test_an_overloaded_run_says_so(tmp_path):
    rows = [_sdpa("torch_sdpa", L, 1e-3, 10) for L in (128, 256)]
    busy = benchmarks.render(_data(rows), tmp_path, "a", source="t")  # load 3.5 on 2 CPUs
    assert "overloaded" in busy
    rows = [({**ei, "load_average": 1.5}, t) for ei, t in rows]
    assert "overloaded" not in benchmarks.render(_data(rows), tmp_path, "a", source="t")
