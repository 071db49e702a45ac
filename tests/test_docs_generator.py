"""The docs generator (docs_gen/) on small inputs of the two JSON formats it reads.

The inputs are built here, not copied from a run, so each assertion says what the page must show
for a known input: a failing claim shows FAIL, a fitted exponent of a quadratic is 2, every
(implementation, length) gets its row and both plots are drawn.
"""

import math

import pytest

from spec_tests.harness import claims

conformance = pytest.importorskip("docs_gen.conformance", reason="the docs generator (docs_gen/) is not importable")
benchmarks = pytest.importorskip("docs_gen.benchmarks")
pytest.importorskip("matplotlib", reason="the docs extra (matplotlib) is not installed")


def _report(statuses: dict[str, dict[str, str]]) -> dict:
    impls = sorted({i for per in statuses.values() for i in per})
    return {
        "created": "2026-01-01T00:00:00+00:00",
        "machine": {"platform": "Linux-test", "processor": "x86_64", "cpus": 2},
        "versions": {"python": "3.11.7", "numpy": "2.0"},
        "implementations": {i: {"backend": "numpy", "device": "cpu", "dtypes": ["float64"], "unavailable": None}
                            for i in impls},
        "claims": statuses,
        "tests": [{"nodeid": f"t::{c}[{i}]", "test": f"test_{c.lower()}", "impl": i, "dtype": "float64",
                   "claims": [c], "outcome": s, "message": "boom\nmore" if s == "failed" else ""}
                  for c, per in statuses.items() for i, s in per.items()],
    }


def _row(page: str, claim_id: str) -> str:
    """The matrix's row of one claim (an HTML table row, one line, whose first cell links the claim)."""
    return next(line for line in page.splitlines() if line.startswith("<tr>") and f">{claim_id}</a></td>" in line)


def test_conformance_cells_follow_the_report():
    page = conformance.render(_report({"SDPA-1": {"good": "passed", "bad": "failed"},
                                       "MASK-4": {"good": "passed", "bad": "not implemented"}}))
    sdpa, mask = _row(page, "SDPA-1"), _row(page, "MASK-4")
    # columns in the report's order of implementations: bad, good
    assert sdpa.index("FAIL") < sdpa.index(">pass<"), sdpa
    assert "not impl" in mask and "FAIL" not in mask, mask
    assert "| `bad` | `test_sdpa-1` | float64 | boom |" in page  # the failure, with its first line only
    assert "2026-01-01" in page and "Linux-test" in page and "numpy 2.0" in page


def test_conformance_lists_every_claim_of_the_catalogue():
    page = conformance.render(_report({"SDPA-1": {"a": "passed"}}))
    for cid in claims.catalogue():
        assert f">{cid}</a></td>" in page, f"{cid} has no row in the matrix"
    assert "spec-none" in _row(page, "MASK-4"), "a claim with no outcome shows '-', not a status"


def test_not_applicable_is_counted_apart_from_not_passed():
    page = conformance.render(_report({"SDPA-1": {"a": "passed"}, "SDPA-2": {"a": "passed"},
                                       "GRAD-1": {"a": "not applicable"}, "MASK-4": {"a": "failed"}}))
    row = next(line for line in page.splitlines() if line.startswith("| `a` |"))
    # passed of applicable | not passed | not applicable
    assert "| 2 of 3 | 1 | 1 |" in row, row


def _bench(points):
    return {
        "machine_info": {"cpu": {"brand_raw": "Test CPU", "count": 2}, "system": "Linux", "release": "6",
                         "python_version": "3.11.7"},
        "commit_info": {"id": "0123456789abcdef", "dirty": False},
        "datetime": "2026-01-01T00:00:00", "version": "5.1.0",
        "benchmarks": [{"name": f"b[{impl}-{L}]", "stats": {"median": t, "rounds": 5},
                        "extra_info": {"impl": impl, "op": "sdpa", "dtype": "float32", "B": 1, "H": 2, "L": L,
                                       "d": 8, "causal": False, "flops": 4 * 2 * L * L * 8, "peak_bytes": m}}
                       for impl, L, t, m in points],
    }


def test_fitted_exponent_of_a_power_law():
    Ls = [64, 128, 256, 512]
    assert benchmarks.fit_exponent(Ls, [3e-9 * L**2 for L in Ls]) == pytest.approx(2.0)
    assert benchmarks.fit_exponent(Ls, [5.0 * L for L in Ls]) == pytest.approx(1.0)
    assert benchmarks.fit_exponent([64], [1.0]) is None


def test_benchmark_page_tables_and_plots(tmp_path):
    points = [(impl, L, c * L**p * 1e-9, 16.0 * L**p) for impl, c, p in (("naive", 4.0, 2), ("chunked", 300.0, 1))
              for L in (128, 256, 512)]
    page = benchmarks.render(_bench(points), tmp_path, "assets", source="test")
    svgs = sorted(p.name for p in tmp_path.glob("*.svg"))
    assert svgs == ["sdpa-float32-B1-H2-d8-cpu-full-memory.svg", "sdpa-float32-B1-H2-d8-cpu-full-time.svg"], svgs
    for name in svgs:
        assert f"(assets/{name})" in page
    rows = [line for line in page.splitlines() if line.startswith("| 128 |") or line.startswith("| 512 |")]
    assert len(rows) == 4, rows
    assert "| `naive` | L<sup>2.00</sup> | L<sup>2.00</sup> |" in page
    assert "| `chunked` | L<sup>1.00</sup> | L<sup>1.00</sup> |" in page
    gflops = 4 * 2 * 512 * 512 * 8 / (4.0 * 512**2 * 1e-9) / 1e9  # flops over the median
    assert f"| 512 | `naive` | {benchmarks.fmt_time(4.0 * 512**2 * 1e-9)} | {gflops:.3g} |" in page
    assert math.isfinite(gflops) and "Test CPU" in page


def test_measurements_fragment_summarises_and_folds_the_figures(tmp_path):
    measurements = pytest.importorskip("docs_gen.measurements")

    figures = {"impl": "mine", "dtype": "float32",
               "chunked": {"L": [256, 512], "peak_bytes": [1024, 2048], "growth_exponent": 1.0},
               "naive_control": {"L": [128, 256], "peak_bytes": [4096, 16384], "growth_exponent": 2.0}}
    (tmp_path / "EFF-2-mine-float32.json").write_text(__import__("json").dumps(figures))
    (tmp_path / "SDPA-1-other.json").write_text("{}")  # another chapter's: not on this page
    chapters, catalogue = claims.chapters(), claims.catalogue()
    page = measurements.fragment(chapters["efficient"], catalogue, tmp_path, "2026-01-01")
    assert "| [EFF-2](#eff-2) | `mine-float32` | growth exponent 1.0 | growth exponent 2.0 |" in page, page
    assert '??? info "EFF-2: mine-float32"' in page and "    | 512 | 2 KiB |" in page
    assert "SDPA-1" not in page
    empty = measurements.fragment(chapters["sdpa"], catalogue, tmp_path / "missing", None)
    assert "No test of this chapter recorded measurements" in empty


def test_merged_reports_keep_both_runs_and_recompute_the_claims(tmp_path):
    """docs_gen --merge-report: CI's run of the built-ins and a run of the template, one conformance table."""
    import json

    from docs_gen.__main__ import merge_reports

    def outcome(impl, outcome_):
        return {"nodeid": f"spec_tests/test_sdpa.py::test_x[{impl}-float64]", "test": "test_x", "impl": impl,
                "dtype": "float64", "claims": ["SDPA-1"], "outcome": outcome_, "message": "", "duration": 0.1}

    builtins, template = tmp_path / "builtins.json", tmp_path / "template.json"
    builtins.write_text(json.dumps({"implementations": {"numpy_fast": {}}, "claims": {},
                                    "tests": [outcome("numpy_fast", "passed")]}))
    builtins.with_suffix(".command.txt").write_text("pytest -n 2\n")
    template.write_text(json.dumps({"implementations": {"template": {}}, "claims": {},
                                    "tests": [outcome("template", "not implemented")]}))
    command = merge_reports(template, [builtins])
    doc = json.loads(template.read_text())
    assert set(doc["implementations"]) == {"numpy_fast", "template"}
    assert doc["claims"]["SDPA-1"] == {"numpy_fast": "passed", "template": "not implemented"}
    assert command.startswith("pytest -n 2")
