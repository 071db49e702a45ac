"""spec_tests/benchmarks/gpu_check.py's parts a CPU can check, so that it runs the day a GPU is lent.

The script's --dry-run parses its arguments, builds a sample result with the row builder the
real run uses, checks it against the JSON schema (docs_gen.benchmarks.validate_gpu) and renders
the GPU rows of docs/benchmarks.md from it. Here: that dry run end to end in a fresh process
(no GPU, PyTorch not imported), bad arguments refused, the phases' budgets within five minutes,
the schema check rejecting broken results, and the page's rows for a known result.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "spec_tests" / "benchmarks" / "gpu_check.py"

benchmarks = pytest.importorskip("docs_gen.benchmarks", reason="the docs generator (docs_gen/) is not importable")


def _script():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_dry_run_end_to_end_writes_a_valid_sample_and_renders_its_rows(tmp_path):
    out = tmp_path / "gpu.json"
    proc = _run("--dry-run", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "dry run ok" in proc.stdout
    result = json.loads(out.read_text())
    assert result["schema"] == 1 and result["sample"] is True
    assert benchmarks.validate_gpu(result) == []
    measured = [r for r in result["benchmarks"] if "tflops" in r]
    assert {r["impl"] for r in measured} == {"torch_sdpa_cuda", "triton_flash"}
    for r in measured:  # the row builder's arithmetic: TFLOP/s and its share of the peak
        flops = 4.0 * r["B"] * r["H"] * r["L"] ** 2 * r["d"] / (2.0 if r["causal"] else 1.0)
        assert r["flops"] == flops
        assert r["tflops"] == pytest.approx(flops / r["seconds"] / 1e12, abs=0.01)
        assert r["percent_of_peak"] == pytest.approx(100 * r["tflops"] / result["peak_tflops"], abs=0.1)
    assert "| bfloat16 | 64 | 4096 | no | `triton_flash` |" in proc.stdout


def test_dry_run_does_not_need_pytorch(tmp_path):
    """The dry run imports neither torch nor triton: CI machines without them can run it."""
    code = ("import runpy, sys\n"
            f"sys.argv = ['gpu_check.py', '--dry-run', '--out', sys.argv[1]]\n"
            "try:\n"
            f"    runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n"
            "except SystemExit as e:\n"
            "    assert e.code == 0, e.code\n"
            "assert 'torch' not in sys.modules and 'triton' not in sys.modules, 'the dry run imported torch'\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "g.json")], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("args", [["--bench-budget", "abc"], ["--budget", "0"], ["--test-timeout", "-5"],
                                  ["--no-such-option"]])
def test_bad_arguments_are_refused(args):
    proc = _run("--dry-run", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "usage:" in proc.stderr


def test_phases_fit_in_five_minutes():
    """The default limits of the phases add up to the overall budget or less, and that to under 300 s."""
    ns = _script().parser().parse_args([])
    assert ns.install_timeout + ns.test_timeout + ns.bench_budget <= ns.budget < 300


def test_schema_check_rejects_broken_results():
    gpu = _script()
    good = gpu.sample_result(790.0)
    assert benchmarks.validate_gpu(good) == []
    for breaks, expect in [
        (lambda r: r.pop("environment"), "'environment'"),
        (lambda r: r.update(schema=2), "schema 2"),
        (lambda r: r["benchmarks"][1].pop("tflops"), "'tflops'"),
        (lambda r: r["benchmarks"][1].update(L="4096"), "'L'"),
        (lambda r: r["tests"]["claims"].update({"EFF-1": "pass"}), "EFF-1"),
    ]:
        broken = json.loads(json.dumps(good))
        breaks(broken)
        problems = benchmarks.validate_gpu(broken)
        assert any(expect in p for p in problems), (expect, problems)
        assert "does not have the expected form" in "\n".join(benchmarks.gpu_section(broken))


def test_page_gpu_rows_for_a_known_result():
    gpu = _script()
    result = gpu.new_result(800.0)
    result["environment"] = {"gpu": "Test GPU", "torch": "2.9", "cuda": "12.8", "triton": "3.4", "flash_attn": "2.8"}
    result["tests"] = {"exit_code": 1, "seconds": 12.5,
                       "claims": {"EFF-3": {"torch_sdpa_cuda": "pass", "triton_flash": "FAIL"}}}
    result["benchmarks"] = [gpu.bench_row("torch_sdpa_cuda", "bfloat16", 4096, 128, True, 2e-3, 10 * 2**20, 800.0),
                            gpu.bench_row("triton_flash", "bfloat16", 4096, 128, True, 4e-3, 12 * 2**20, 800.0)]
    lines = benchmarks.gpu_section(result)
    page = "\n".join(lines)
    assert "Sample data" not in page and "Test GPU" in page
    assert "| EFF-3 | pass | FAIL |" in page
    flops = 4.0 * 4 * 16 * 4096**2 * 128 / 2
    row = next(line for line in lines if "`triton_flash`" in line and line.startswith("| bfloat16"))
    assert f"| {flops / 4e-3 / 1e12:.1f} |" in row and "| 0.50× |" in row and "12 MiB" in row, row
    assert "No GPU run yet" in "\n".join(benchmarks.gpu_section(None))
