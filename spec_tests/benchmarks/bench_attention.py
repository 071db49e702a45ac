"""Benchmarks: scaled dot-product attention, multi-head attention and LayerNorm, per implementation.

Every implementation selected with --impl (default: every built-in that runs here), in the
dtypes of MHA_SPEC_BENCH_DTYPES, at the sizes of MHA_SPEC_BENCH_SIZE (conftest.py), grouped
by operation and size (pytest-benchmark's groups); the docs page groups them by everything but
the length (the width D, for LayerNorm) and plots each group against it. FLOPs counted (forward, multiply-adds as 2):

    sdpa        4 B H L_q L_k d            (Q K^T and P V), halved when causal
    mha         8 B L D^2 + 4 B H L^2 d_k  (four projections, then attention), attention halved when causal
    layer_norm  8 B L D                    (a rough count: mean, centre, square, mean, scale, shift)
"""

import pytest

from spec_tests.benchmarks.conftest import SIZE, run_case
from spec_tests.harness.strategies import mha_weights, normal

# Every group (a configuration of everything but the length) is measured at several lengths, so
# that each plot has a slope and each fitted exponent a value; LayerNorm at several widths D.
LENGTHS = {"tiny": [8, 16], "default": [256, 512, 1024, 2048], "large": [1024, 2048, 4096, 8192]}[SIZE]
SDPA_GROUPS = {  # (B, H, d); B=1, H=8, d=64 is bench_sweep.py's, to L = 4096
    "tiny": [(1, 2, 8)],
    "default": [(4, 8, 64), (2, 8, 128)],
    "large": [(4, 16, 64), (1, 16, 128)],
}[SIZE]
MHA_GROUPS = {  # (B, D, H)
    "tiny": [(1, 16, 2)],
    "default": [(2, 512, 8)],
    "large": [(2, 1024, 16)],
}[SIZE]
LN_GROUPS = {  # (B, L), over the widths LN_WIDTHS
    "tiny": [(2, 8)],
    "default": [(8, 512)],
    "large": [(16, 4096)],
}[SIZE]
LN_WIDTHS = {"tiny": [16, 32], "default": [256, 512, 1024, 2048], "large": [1024, 2048, 4096, 8192]}[SIZE]
SDPA_SIZES = [(B, H, L, d) for B, H, d in SDPA_GROUPS for L in LENGTHS]
MHA_SIZES = [(B, L, D, H) for B, D, H in MHA_GROUPS for L in LENGTHS]
LN_SIZES = [(B, L, D) for B, L in LN_GROUPS for D in LN_WIDTHS]


def attention_flops(B, H, L_q, L_k, d, causal):
    return 4.0 * B * H * L_q * L_k * d / (2.0 if causal else 1.0)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("B, H, L, d", SDPA_SIZES, ids=[f"B{b}-H{h}-L{l}-d{d}" for b, h, l, d in SDPA_SIZES])
def test_sdpa(benchmark, impl, B, H, L, d, causal):
    q, k, v = (normal(i, (B, H, L, d)) for i in range(3))
    info = dict(op="sdpa", shape=f"B={B} H={H} L={L} d={d}" + (" causal" if causal else ""),
                B=B, H=H, L=L, L_k=L, d=d, D=H * d, causal=causal)
    run_case(benchmark, impl, "scaled_dot_product_attention", (q, k, v), {"is_causal": causal}, info,
             attention_flops(B, H, L, L, d, causal))


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("B, L, D, H", MHA_SIZES, ids=[f"B{b}-L{l}-D{dm}-H{h}" for b, l, dm, h in MHA_SIZES])
def test_mha(benchmark, impl, B, L, D, H, causal):
    x = normal(0, (B, L, D))
    info = dict(op="mha", shape=f"B={B} L={L} D={D} H={H}" + (" causal" if causal else ""),
                B=B, H=H, L=L, L_k=L, d=D // H, D=D, causal=causal)
    flops = 8.0 * B * L * D * D + attention_flops(B, H, L, L, D // H, causal)
    run_case(benchmark, impl, "multi_head_attention", (x, x, x, mha_weights(1, D, True), H), {"is_causal": causal},
             info, flops)


@pytest.mark.parametrize("B, L, D", LN_SIZES, ids=[f"B{b}-L{l}-D{dm}" for b, l, dm in LN_SIZES])
def test_layer_norm(benchmark, impl, B, L, D):
    x, g, b = normal(0, (B, L, D)), normal(1, (D,), 0.5, 1.0), normal(2, (D,))
    info = dict(op="layer_norm", shape=f"B={B} L={L} D={D}", B=B, H=None, L=L, L_k=None, d=None, D=D, causal=False,
                axis="D")  # plotted against the width D
    run_case(benchmark, impl, "layer_norm", (x, g, b), {}, info, 8.0 * B * L * D)
