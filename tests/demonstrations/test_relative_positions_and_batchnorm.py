"""PE-5 and LN-8, the halves that hold by construction: demonstrated, not claimed of an implementation.

A T5 bias built from relative positions j - i is constant along diagonals whatever the buckets are;
ALiBi's slopes are the reference's; BatchNorm (reference.BatchNorm) depends on its batch and on
training/inference. `impl` here is the float64 reference implementation.
"""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import reference
from tests.demonstrations import demonstration
from spec_tests.harness import check
from spec_tests.harness.strategies import SEEDS, normal
from spec_tests.test_positional import _buckets, bucket_settings




@demonstration("PE-5")
@given(settings=bucket_settings(), L_q=st.integers(1, 12), L_k=st.integers(1, 12), heads=st.integers(1, 3), seed=SEEDS)
def test_t5_bias_matrix_depends_only_on_the_offset(impl, settings, L_q, L_k, heads, seed):
    """bias[h, i, j] = table[h, bucket(j - i)] is Toeplitz: bias[h, i + 1, j + 1] == bias[h, i, j]."""
    bidirectional, num_buckets, max_distance = settings
    buckets = _buckets(impl, reference.relative_positions(L_q, L_k), bidirectional, num_buckets, max_distance)
    check.holds(impl, bool(((buckets >= 0) & (buckets < num_buckets)).all()),
                f"buckets lie in 0..{num_buckets - 1}", arrays=[buckets])
    table = normal(seed, (heads, num_buckets))
    bias = table[:, buckets.astype(np.int64)]  # (H, L_q, L_k)
    check.exactly(impl, bias[:, 1:, 1:], bias[:, :-1, :-1], "the T5 bias is constant along every diagonal (j - i)")


@demonstration("PE-5")
@given(heads=st.sampled_from([1, 2, 4, 8, 16]))
def test_alibi_slopes_are_a_geometric_sequence(impl, heads):
    """ALiBi's head slopes (reference.alibi_slopes) for H a power of two: s_h = 2^(-8h/H), h = 1..H."""
    check.exactly(impl, reference.alibi_slopes(heads), 2.0 ** (-8.0 * np.arange(1, heads + 1) / heads),
                  f"ALiBi slopes for {heads} heads are 2^(-8h/{heads})")


@demonstration("LN-8")
@given(seed=SEEDS, D=st.integers(1, 12))
def test_batchnorm_gives_a_sample_a_different_output_in_another_batch(impl, seed, D):
    """In [x - u, x, x + u] the batch mean is x, so BatchNorm maps x to 0; in [x, x + u, x + 2u] the mean is
    x + u and the variance 2u²/3, so it maps x to -u / sqrt(2u²/3 + eps) ~ -1.22, whatever x and u > 0 are."""
    x = normal(seed, (1, D))
    u = np.abs(normal(seed + 1, (1, D))) + 0.5
    bn_a = reference.BatchNorm(D)(np.concatenate([x - u, x, x + u]))[1]
    bn_b = reference.BatchNorm(D)(np.concatenate([x, x + u, x + 2 * u]))[0]
    check.holds(impl, bool((np.abs(bn_a - bn_b) > 1.0).all()), "BatchNorm (training) gives the same sample a "
                "different output in a different batch", [f"BatchNorm outputs {bn_a} and {bn_b}"])


@demonstration("LN-8")
@given(seed=SEEDS, D=st.integers(2, 12))
def test_batchnorm_differs_between_training_and_inference(impl, seed, D):
    """BatchNorm switches to running statistics at inference: a different function of the same input."""
    x = normal(seed, (8, D), 2.0, 1.0)
    bn = reference.BatchNorm(D)
    train = bn(x)
    bn.training = False
    infer = bn(x)
    check.holds(impl, float(np.abs(train - infer).max()) > 1e-2, "BatchNorm gives different outputs in training "
                "and inference", [f"largest difference {np.abs(train - infer).max():.3g}"])


@demonstration("LN-8")
@given(seed=SEEDS, D=st.integers(2, 12))
def test_batchnorm_on_a_batch_of_one_outputs_beta(impl, seed, D):
    """BatchNorm (training) on one sample outputs beta (0) for every feature."""
    x = normal(seed, (1, D))
    bn = reference.BatchNorm(D)(3.0 + 2.0 * (x - x.mean()) / x.std())
    check.holds(impl, bool(np.allclose(bn, 0.0)), "BatchNorm on a batch of one outputs beta = 0 everywhere",
                [f"seen {bn}"])


@demonstration("LN-8")
@given(seed=SEEDS, D=st.integers(2, 8), n=st.integers(1, 6), pad=st.integers(1, 6))
def test_batchnorm_over_padded_sequences_depends_on_padding(impl, seed, D, n, pad):
    """BatchNorm's statistics include pad positions: its output at real positions changes with the padding."""
    seq = normal(seed, (1, n, D), 1.0, 2.0)
    short = np.concatenate([seq, np.zeros((1, 1, D))], axis=1)
    long = np.concatenate([seq, np.zeros((1, 1 + pad, D))], axis=1)
    bn_short, bn_long = reference.BatchNorm(D)(short)[0, :n], reference.BatchNorm(D)(long)[0, :n]
    check.holds(impl, float(np.abs(bn_short - bn_long).max()) > 1e-3, "BatchNorm's output at real positions changes "
                "with the amount of padding", [f"largest change {np.abs(bn_short - bn_long).max():.3g}"])
