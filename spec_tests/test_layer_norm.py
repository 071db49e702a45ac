"""Chapter: LayerNorm (docs/layer_norm.md). Claims LN-1 .. LN-8.

    μ = mean(x),  σ² = mean((x - μ)²)  over the last axis (D features)         (lecture note 2 §2.1)
    y = γ (x - μ) / sqrt(σ² + ε) + β,   ε = 1e-5 by default, inside the square root

Lecture note 2 §2.2's code divides by (std + eps) with the *unbiased* std; that is a different function,
and LN-6 tells them apart. BatchNorm (reference.BatchNorm) is the contrast of §2.3's table.
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import reference
from spec_tests.harness import check, tolerance
from spec_tests.harness.strategies import SEEDS, LayerNormCase, layer_norm_cases, normal

claim = pytest.mark.claim
LN = "layer_norm"


# ---------------------------------------------------------------------------------- LN-1
@claim("LN-1")
@given(case=layer_norm_cases(), eps=st.sampled_from([1e-5, 1e-3, 0.1, 1.0]))
@example(case=LayerNormCase((2,), 4, seed=0), eps=1e-5)
def test_layer_norm_matches_oracle(impl, case, eps):
    """gamma * (x - mean) / sqrt(var + eps) + beta with the biased variance, for any eps."""
    check.oracle(impl, LN, case.x, case.gamma, case.beta, eps=eps)


@claim("LN-1")
@given(case=layer_norm_cases(spreads=st.sampled_from([1e-3, 3e-3, 1e-2])))
def test_default_eps_is_1e_minus_5(impl, case):
    """Leaving eps out means eps = 1e-5: rows whose variance is ~1e-5 show the difference from 1e-6 or 0."""
    check.oracle(impl, LN, case.x, case.gamma, case.beta)


# ---------------------------------------------------------------------------------- LN-2
@claim("LN-2")
@given(case=layer_norm_cases(affine=False), eps=st.sampled_from([1e-5, 0.1]))
def test_normalised_rows_have_mean_zero_and_shrunk_variance(impl, case, eps):
    """With gamma = 1, beta = 0: each row's mean is 0 and its variance is var / (var + eps)."""
    y = impl.layer_norm(case.x, case.gamma, case.beta, eps=eps)
    x = impl.round(case.x)
    var = x.var(axis=-1)
    size = tolerance.layer_norm_size(x, case.gamma, case.beta, eps)  # x - mean loses |mean| * eps, over the spread
    check.close(impl, y.mean(axis=-1), np.zeros(x.shape[:-1]), "each normalised row has mean 0", size=size)
    check.close(impl, y.var(axis=-1), var / (var + eps), "each normalised row has variance var / (var + eps)",
                size=size)


# ---------------------------------------------------------------------------------- LN-3
@claim("LN-3")
@given(case=layer_norm_cases(affine=True))
def test_gamma_scales_and_beta_shifts_each_feature(impl, case):
    """LN(x; gamma, beta) == gamma * LN(x; 1, 0) + beta; gamma = 1, beta = 0 is the identity affine."""
    D = case.D
    plain = check.oracle(impl, LN, case.x, np.ones(D), np.zeros(D))
    g, b = impl.round(case.gamma), impl.round(case.beta)
    affine = impl.layer_norm(case.x, case.gamma, case.beta)
    check.close(impl, affine, g * plain + b, "layer_norm(x, gamma, beta) == gamma * layer_norm(x, 1, 0) + beta",
                size=tolerance.layer_norm_size(impl.round(case.x), g, b))


# ---------------------------------------------------------------------------------- LN-4
@claim("LN-4")
@given(seed=SEEDS, D=st.integers(2, 16), i=st.integers(0, 63))
def test_a_sample_does_not_depend_on_the_batch(impl, seed, D, i):
    """Row i normalised in a batch of 64 equals row i normalised alone, and other rows do not matter."""
    x = normal(seed, (64, D), 2.0, 1.0)
    g, b = normal(seed + 1, (D,), 0.5, 1.0), normal(seed + 2, (D,))
    batch = impl.layer_norm(x, g, b)
    alone = impl.layer_norm(x[i:i + 1], g, b)
    check.close(impl, batch[i], alone[0], f"row {i} in a batch of 64 equals row {i} in a batch of 1",
                size=tolerance.layer_norm_size(impl.round(x[i]), g, b))
    other = x.copy()
    other[np.arange(64) != i] = normal(seed + 3, (63, D), 30.0, -7.0)
    check.close(impl, impl.layer_norm(other, g, b)[i], batch[i],
                f"changing every other row leaves row {i} unchanged", size=tolerance.layer_norm_size(impl.round(x[i]), g, b))


@claim("LN-4")
@given(seed=SEEDS, B=st.integers(1, 3), L=st.integers(1, 6), D=st.integers(2, 10))
def test_statistics_are_over_the_last_axis_only(impl, seed, B, L, D):
    """For (B, L, D) input each position is normalised on its own: the same as normalising it alone."""
    x = normal(seed, (B, L, D), 3.0, 2.0)
    g, b = np.ones(D), np.zeros(D)
    out = impl.layer_norm(x, g, b)
    one_by_one = np.stack([impl.layer_norm(x[:, l], g, b) for l in range(L)], axis=1)
    check.close(impl, out, one_by_one, "normalising (B, L, D) at once equals normalising each position alone",
                size=tolerance.layer_norm_size(impl.round(x), g, b))


# ---------------------------------------------------------------------------------- LN-5
@claim("LN-5")
@given(case=layer_norm_cases(), a=st.sampled_from([0.5, 2.0, 4.0]), c=st.sampled_from([0.0, 3.0, -10.0]),
       eps=st.sampled_from([1e-5, 1e-2]))
def test_shift_and_positive_scale_do_not_change_the_output(impl, case, a, c, eps):
    """LN(a x + c) == LN(x) for a > 0, exactly when eps scales with a²: LN(a x + c; a² eps) == LN(x; eps)."""
    x = impl.round(case.x)
    y = impl.layer_norm(x, case.gamma, case.beta, eps=eps)
    y2 = impl.layer_norm(a * x + c, case.gamma, case.beta, eps=a * a * eps)
    check.close(impl, y2, y, f"layer_norm({a} x + {c}, eps={a * a * eps:g}) == layer_norm(x, eps={eps:g})",
                size=max(tolerance.layer_norm_size(x, case.gamma, case.beta, eps),
                         tolerance.layer_norm_size(a * x + c, case.gamma, case.beta, a * a * eps)))


@claim("LN-5")
@given(case=layer_norm_cases())
def test_negating_the_input_negates_the_output(impl, case):
    """With beta = 0: LN(-x) == -LN(x)."""
    beta = np.zeros(case.D)
    y = impl.layer_norm(case.x, case.gamma, beta)
    check.close(impl, impl.layer_norm(-case.x, case.gamma, beta), -y, "layer_norm(-x) == -layer_norm(x) when beta = 0",
                size=tolerance.layer_norm_size(impl.round(case.x), case.gamma, beta))


# ---------------------------------------------------------------------------------- LN-6
@claim("LN-6")
def test_biased_variance_with_eps_inside_the_root(impl):
    """Row [1, 0, 0, 0]: mean 0.25, biased variance 0.1875, so y[0] = 0.75 / sqrt(0.1875 + 1e-5) = 1.7320...

    Lecture note 2 §2.2's code gives 0.75 / (0.5 + eps) = 1.5 instead (unbiased std 0.5, eps added to the std).
    """
    x = np.array([[1.0, 0.0, 0.0, 0.0]])
    y = impl.layer_norm(x, np.ones(4), np.zeros(4))
    seed_code = np.array([[0.75, -0.25, -0.25, -0.25]]) / (0.5 + 1e-5)
    details = []
    if np.allclose(y, seed_code, rtol=1e-2):
        details.append("seen the lecture notes' code: unbiased std (divide by D - 1) with eps added to the std")
    check.holds(impl, not details, "layer_norm([1, 0, 0, 0]) is [1.732, -0.577, -0.577, -0.577], not [1.5, -0.5, ...]",
                details + [f"seen {y[0]}"], [y])
    # against the reference, [0.75, -0.25, -0.25, -0.25] / sqrt(0.1875 + 1e-5), precision charged once (PREC-3)
    check.oracle(impl, LN, x, np.ones(4), np.zeros(4))


@claim("LN-6")
@given(case=layer_norm_cases(dims=st.integers(2, 5), affine=False))
def test_short_rows_tell_biased_from_unbiased(impl, case):
    """Rows of 2..5 features, where dividing by D or by D - 1 differs most, match the reference."""
    check.oracle(impl, LN, case.x, case.gamma, case.beta)


# ---------------------------------------------------------------------------------- LN-7
@claim("LN-7")
@given(seed=SEEDS, D=st.sampled_from([8, 64, 256]), mean=st.sampled_from([1e4, -3e4, 1e5]))
def test_large_mean_rows_normalise_accurately(impl, seed, D, mean):
    """float32/float64 rows of (large mean + unit noise): E[x²] - E[x]² would cancel to garbage; two passes do not."""
    if impl.dtype in ("float16", "bfloat16"):
        pytest.skip("not applicable: a mean of 1e4 swamps unit noise in float16/bfloat16 inputs themselves")
    check.oracle(impl, LN, normal(seed, (4, D), 1.0, mean), normal(seed + 1, (D,), 0.5, 1.0), normal(seed + 2, (D,)))


@claim("LN-7")
@given(seed=SEEDS, D=st.sampled_from([64, 256, 1024]), mean=st.sampled_from([300.0, -250.0]))
def test_low_precision_statistics_are_computed_in_float32(impl, seed, D, mean):
    """float16/bfloat16 rows of (mean 300 + unit noise): as accurate as float32 statistics rounded at the end.

    Statistics kept in float16 lose the mean (float16 spacing at 300 is 0.25) or overflow (300² > 65504).
    """
    if impl.dtype not in ("float16", "bfloat16"):
        pytest.skip("not applicable: this is the low-precision half of LN-7; this run is " + impl.dtype)
    x, g, b = normal(seed, (4, D), 1.0, mean), normal(seed + 1, (D,), 0.5, 1.0), normal(seed + 2, (D,))
    y = impl.layer_norm(x, g, b)
    r = impl.round((x, g, b))
    expected = reference.layer_norm(*r)
    bound = tolerance.float32_statistics_bound(impl.dtype, expected, r)
    check.compare(impl, y, expected, bound,
                  "low-precision layer_norm against the reference, allowed what float32 statistics would err")


# ---------------------------------------------------------------------------------- LN-8
# BatchNorm's side of each contrast (its output changes with the batch, with training/inference, with one
# sample, with padding) does not depend on the implementation: tests/demonstrations/ shows it on the
# reference. The claims below are LayerNorm's side, and they are the implementation's.
@claim("LN-8")
@given(seed=SEEDS, D=st.integers(1, 12))
def test_layer_norm_does_not_depend_on_the_batch(impl, seed, D):
    """Statistics axis: one sample x in two batches ([x - u, x, x + u] and [x, x + u, x + 2u], where BatchNorm maps
    x to 0 and to about -1.22): LayerNorm gives x the same output in either."""
    x = normal(seed, (1, D))
    u = np.abs(normal(seed + 1, (1, D))) + 0.5
    batch_a, batch_b = np.concatenate([x - u, x, x + u]), np.concatenate([x, x + u, x + 2 * u])
    g, b = np.ones(D), np.zeros(D)
    check.close(impl, impl.layer_norm(batch_a, g, b)[1], impl.layer_norm(batch_b, g, b)[0],
                "LayerNorm gives the sample the same output in either batch",
                size=tolerance.layer_norm_size(impl.round(batch_a), g, b))


@claim("LN-8")
@given(seed=SEEDS, D=st.integers(2, 12))
def test_layer_norm_has_no_training_and_inference_modes(impl, seed, D):
    """Inference difference: BatchNorm switches to running statistics; LayerNorm is the same function every call."""
    x = normal(seed, (8, D), 2.0, 1.0)
    g, b = np.ones(D), np.zeros(D)
    check.equal(impl, impl.layer_norm(x, g, b), impl.layer_norm(x, g, b), "LayerNorm is the same function every call")


@claim("LN-8")
@given(seed=SEEDS, D=st.integers(2, 12))
def test_layer_norm_keeps_a_lone_sample(impl, seed, D):
    """Small batches: BatchNorm (training) on one sample outputs beta for every feature; LayerNorm keeps its pattern."""
    x = normal(seed, (1, D))
    x = 3.0 + 2.0 * (x - x.mean()) / x.std()  # a sample with a spread (var 4 >> eps): LN keeps its pattern
    g, b = np.ones(D), np.zeros(D)
    y = check.oracle(impl, LN, x, g, b)
    check.holds(impl, float(np.abs(y).max()) > 0.1, "LayerNorm on the same sample keeps its pattern", [f"seen {y}"], [y])


@claim("LN-8")
@given(seed=SEEDS, D=st.integers(2, 8), n=st.integers(1, 6), pad=st.integers(1, 6))
def test_layer_norm_over_padded_sequences_ignores_padding(impl, seed, D, n, pad):
    """Variable length (the RNN row): BatchNorm's statistics include pad positions; LayerNorm's never do."""
    seq = normal(seed, (1, n, D), 1.0, 2.0)
    short = np.concatenate([seq, np.zeros((1, 1, D))], axis=1)
    long = np.concatenate([seq, np.zeros((1, 1 + pad, D))], axis=1)
    g, b = np.ones(D), np.zeros(D)
    check.close(impl, impl.layer_norm(short, g, b)[0, :n], impl.layer_norm(long, g, b)[0, :n],
                "LayerNorm's output at real positions does not depend on the padding",
                size=tolerance.layer_norm_size(impl.round(short), g, b))
