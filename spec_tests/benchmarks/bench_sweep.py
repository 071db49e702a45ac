"""The SDPA forward sweep of the chunked kernels: B=1, H=8, d=64, L = 256 .. 4096, on the CPU.

For the chunked implementations and their baselines, side by side in one run:

    pytest spec_tests/benchmarks/bench_sweep.py --impl numpy_chunked,numpy_fast,torch_chunked,torch_sdpa \
        --benchmark-json=build/sweep.json
    python -m spec_tests.benchmarks.ratios build/sweep.json     # the ratios at L = 4096

(`python -m spec_tests.benchmarks.ratios` with no file runs the L = 4096 cases itself.)
Grouped by L; extra_info as in conftest.py. On a GPU (MHA_SPEC_BENCH_SIZE=large) L goes to 16384.
"""

import pytest

from spec_tests.benchmarks.bench_attention import attention_flops
from spec_tests.benchmarks.conftest import SIZE, run_case
from spec_tests.harness.strategies import normal

B, H, D_HEAD = 1, 8, 64
SWEEP_L = {"tiny": [32, 64], "default": [256, 512, 1024, 2048, 4096], "large": [1024, 4096, 8192, 16384]}[SIZE]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("L", SWEEP_L, ids=[f"L{L}" for L in SWEEP_L])
def test_sdpa_sweep(benchmark, impl, L, causal):
    q, k, v = (normal(10 + i, (B, H, L, D_HEAD)) for i in range(3))
    info = dict(op="sdpa", shape=f"sweep L={L}" + (" causal" if causal else ""), sweep=True,
                B=B, H=H, L=L, L_k=L, d=D_HEAD, D=H * D_HEAD, causal=causal)
    run_case(benchmark, impl, "scaled_dot_product_attention", (q, k, v), {"is_causal": causal}, info,
             attention_flops(B, H, L, L, D_HEAD, causal))
