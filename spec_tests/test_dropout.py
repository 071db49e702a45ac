"""Chapter: attention dropout (docs/dropout.md). Claims DROP-1 .. DROP-3.

    M_ij ~ Bernoulli(1 - p)          each weight kept with probability 1 - p, one draw per weight and head
    P'_ij = P_ij · M_ij / (1 - p)    so that E[P'] = P and E[out] = P V        (Srivastava et al. 2014)

    scaled_dot_product_attention(..., dropout_p=0.0, generator=None), attention_weights(...) likewise;
    multi_head_attention(..., dropout_p=0.0, training=False, generator=None): no dropout in evaluation.

The generator is the caller's (np.random.Generator for NumPy, torch.Generator for torch; the suite makes a
fresh one in a fixed state for every call), so the same generator state gives the same pattern. The statistical
checks use bounds of 6 standard deviations of a binomial or of the sample mean: a correct implementation
fails one with probability about 2e-9 per check (two-sided normal tail at 6 sigma). The keywords are optional
(CONTRACT.md, "Dropout"): without them these claims are "not implemented".
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from spec_tests.harness import carried, check, tolerance
from spec_tests.harness.arrays import Seeded
from spec_tests.harness.strategies import HEAD_DIMS, SEEDS, mha_weights, normal

claim = pytest.mark.claim
SDPA = "scaled_dot_product_attention"
RATES = st.sampled_from([0.1, 0.25, 0.5, 0.8])
SIGMAS = 6.0  # two-sided normal tail beyond 6 sigma: about 2e-9, the false-positive rate of each check


def _qkv(seed, shape_q, shape_k, d_v):
    """q (..., L_q, d), k (..., L_k, d), v (..., L_k, d_v), unit normal."""
    return normal(seed, shape_q), normal(seed + 1, shape_k), normal(seed + 2, (*shape_k[:-1], d_v))


# ---------------------------------------------------------------------------------- DROP-1
@claim("DROP-1")
@given(seed=SEEDS, H=st.integers(1, 3), L_q=st.integers(1, 6), L_k=st.integers(1, 6), d=HEAD_DIMS,
       causal=st.booleans())
def test_dropout_zero_is_the_identity(impl, seed, H, L_q, L_k, d, causal):
    """dropout_p = 0 (with a generator given or not) changes nothing: the output and the weights are those
    without the keyword."""
    q, k, v = _qkv(seed, (H, L_q, d), (H, L_k, d), d)
    off = impl.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=0.0, generator=Seeded(seed))
    plain = impl.scaled_dot_product_attention(q, k, v, is_causal=causal)
    check.close(impl, off, plain, "dropout_p=0 equals no dropout", size=tolerance.attention_output_size(v))
    weights = impl.attention_weights(q, k, is_causal=causal, dropout_p=0.0)
    check.close(impl, weights, impl.attention_weights(q, k, is_causal=causal),
                "attention_weights with dropout_p=0 equals no dropout", size=tolerance.dropout_size(0.0))


@claim("DROP-1")
@given(seed=SEEDS, rate=RATES)
def test_the_same_generator_state_gives_the_same_pattern(impl, seed, rate):
    """Two calls with generators in the same state give the same result, bit for bit; a generator in another
    state gives other weights (here 2 x 8 x 8 weights: the same pattern of dropped weights by chance has a
    probability below 1e-9)."""
    q, k, _ = _qkv(seed, (2, 8, 4), (2, 8, 4), 4)
    first = impl.attention_weights(q, k, dropout_p=rate, generator=Seeded(seed))
    again = impl.attention_weights(q, k, dropout_p=rate, generator=Seeded(seed))
    check.equal(impl, first, again, f"dropout_p={rate} with the same generator state gives the same weights")
    other = impl.attention_weights(q, k, dropout_p=rate, generator=Seeded(seed + 1))
    check.holds(impl, not np.array_equal(first, other),
                f"dropout_p={rate} with generators in different states gives different weights",
                ["the same weights came out for two different generator states: is the generator used?"],
                [first, other])


@claim("DROP-1")
@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5, float("nan")], ids=["negative", "one", "above-one", "nan"])
def test_a_dropout_rate_outside_zero_one_is_a_value_error(impl, rate):
    """dropout_p must satisfy 0 <= p < 1 (p = 1 would scale by 1 / 0): anything else raises ValueError naming it."""
    q, k, v = _qkv(3, (2, 3, 4), (2, 5, 4), 4)
    check.raises_value_error(impl, SDPA, (q, k, v), dict(dropout_p=rate, generator=Seeded(3)), names=("dropout_p",))


# ---------------------------------------------------------------------------------- DROP-2
@claim("DROP-2")
@given(seed=SEEDS, rate=RATES, causal=st.booleans())
def test_the_dropped_fraction_is_within_a_binomial_bound(impl, seed, rate, causal):
    """Each weight is dropped with probability p: over n weights the dropped fraction lies within 6 standard
    deviations, 6 sqrt(p (1 - p) / n), of p (FlashAttention's tests check it within 0.01)."""
    q, k, _ = _qkv(seed, (2, 4, 16, 8), (2, 4, 16, 8), 8)
    plain = impl.attention_weights(q, k, is_causal=causal)
    dropped = impl.attention_weights(q, k, is_causal=causal, dropout_p=rate, generator=Seeded(seed)) == 0
    cells = plain > 0  # the weights there are to drop (causal hides the rest)
    n = int(cells.sum())
    fraction = float(dropped[cells].mean())
    bound = SIGMAS * np.sqrt(rate * (1 - rate) / n)
    check.holds(impl, abs(fraction - rate) <= bound,
                f"with dropout_p={rate}, the fraction of dropped weights is within {bound:.3g} of {rate}",
                [f"{n} weights, {int(dropped[cells].sum())} dropped: fraction {fraction:.4f}",
                 "a fraction near 0 means the dropout acted on the scores before the softmax (nothing ends at 0), "
                 "or not at all"], [])


@claim("DROP-2")
@given(seed=SEEDS, rate=RATES, d_v=HEAD_DIMS)
def test_kept_weights_are_scaled_by_one_over_one_minus_p(impl, seed, rate, d_v):
    """A kept weight is P_ij / (1 - p), a dropped one exactly 0: the output is P' V with these weights."""
    q, k, v = _qkv(seed, (2, 6, 4), (2, 7, 4), d_v)
    sc = carried.scale_if_charged(impl, q)  # a default scale that fails SDPA-4 is charged there
    plain = impl.attention_weights(q, k, **sc)
    seen = impl.attention_weights(q, k, dropout_p=rate, generator=Seeded(seed), **sc)
    kept = seen != 0
    check.close(impl, seen[kept], plain[kept] / (1 - rate), f"with dropout_p={rate}, each kept weight is "
                f"P / (1 - p) = P x {1 / (1 - rate):.4g}", size=tolerance.dropout_size(rate))
    out = impl.scaled_dot_product_attention(q, k, v, dropout_p=rate, generator=Seeded(seed), **sc)
    check.close(impl, out, seen @ v, "the output is the dropped weights times V (the same generator state)",
                size=tolerance.dropout_size(rate, v))


@claim("DROP-2")
@given(seed=SEEDS, rate=RATES)
def test_dropout_is_unbiased_on_average(impl, seed, rate):
    """E[P'] = P and E[out] = P V: averaged over 64 generator states, each row of weights sums to 1 and the output
    equals the one without dropout, within 6 standard deviations of the sample mean."""
    draws = 64
    q, k, v = _qkv(seed, (2, 8, 4), (2, 8, 4), 4)
    plain_p, plain = impl.attention_weights(q, k), impl.scaled_dot_product_attention(q, k, v)
    sums, outs = [], []
    for r in range(draws):
        sums.append(impl.attention_weights(q, k, dropout_p=rate, generator=Seeded(seed + r)).sum(axis=-1))
        outs.append(impl.scaled_dot_product_attention(q, k, v, dropout_p=rate, generator=Seeded(seed + 1000 + r)))
    ratio = rate / (1 - rate)  # Var[M / (1 - p)] for M ~ Bernoulli(1 - p)
    row_var = ratio * (plain_p ** 2).sum(axis=-1)  # (2, 8): each row sum's variance
    # E[P'] = P: the mean row sum is the plain weights' (1, unless SDPA-2 fails: that bug is charged there)
    mean_sum, plain_sum = float(np.mean(sums)), float(plain_p.sum(axis=-1).mean())
    bound = SIGMAS * np.sqrt(row_var.sum() / (row_var.size ** 2 * draws)) + 64 * impl.eps
    check.holds(impl, abs(mean_sum - plain_sum) <= bound,
                f"with dropout_p={rate}, the rows of weights sum on average to what they sum to without dropout, "
                f"{plain_sum:.4g} (within {bound:.3g})",
                [f"mean row sum over {draws} draws: {mean_sum:.4f}",
                 f"a mean near {1 - rate:g} x {plain_sum:.4g} means the kept weights are not scaled by 1 / (1 - p)"],
                [])
    out_var = ratio * (plain_p ** 2) @ (v ** 2)  # (2, 8, 4): each output's variance
    allowed = SIGMAS * np.sqrt(out_var / draws) + 64 * impl.eps * tolerance.attention_output_size(v) / (1 - rate)
    err = np.abs(np.mean(outs, axis=0) - plain)
    check.holds(impl, bool((err <= allowed).all()),
                f"with dropout_p={rate}, the output averaged over {draws} draws equals the output without dropout",
                [f"largest error {err.max():.4g}, allowed there {allowed.flat[int(np.argmax(err - allowed))]:.4g}"], [])


@claim("DROP-2")
@given(seed=SEEDS, rate=st.sampled_from([0.25, 0.5]))
def test_patterns_are_independent_across_heads_and_batch(impl, seed, rate):
    """Every batch element and head draws its own pattern: with the same q and k in all 2 x 3 slices, no two slices
    drop the same weights (64 weights each: the same pattern by chance has a probability below 1e-8)."""
    q1, k1, _ = _qkv(seed, (8, 4), (8, 4), 4)
    q, k = np.broadcast_to(q1, (2, 3, 8, 4)).copy(), np.broadcast_to(k1, (2, 3, 8, 4)).copy()
    dropped = (impl.attention_weights(q, k, dropout_p=rate, generator=Seeded(seed)) == 0).reshape(6, 64)
    same = [(a, b) for a in range(6) for b in range(a + 1, 6) if (dropped[a] == dropped[b]).all()]
    check.holds(impl, not same, f"with dropout_p={rate}, each batch element and head drops its own weights",
                [f"slices (flattened batch x head) with identical patterns: {same}",
                 "one pattern drawn once and broadcast over heads or batch makes the heads' dropout correlated"], [])


# ---------------------------------------------------------------------------------- DROP-3
def _mha_inputs(seed, B=2, L=5, D=8):
    return normal(seed, (B, L, D)), mha_weights(seed + 1, D, bias=True)


@claim("DROP-3")
@given(seed=SEEDS, rate=RATES, causal=st.booleans())
def test_no_dropout_in_evaluation(impl, seed, rate, causal):
    """multi_head_attention(..., dropout_p=p, training=False) has no dropout: it equals the call without dropout,
    whatever p (leaving dropout on in evaluation is the commonest dropout bug)."""
    x, w = _mha_inputs(seed)
    evaluated = impl.multi_head_attention(x, x, x, w, 2, is_causal=causal, dropout_p=rate, training=False,
                                          generator=Seeded(seed))
    plain = impl.multi_head_attention(x, x, x, w, 2, is_causal=causal)
    check.close(impl, evaluated, plain, f"training=False with dropout_p={rate} equals no dropout",
                size=tolerance.unchanged_size(plain))
    by_default = impl.multi_head_attention(x, x, x, w, 2, is_causal=causal, dropout_p=rate, generator=Seeded(seed))
    check.close(impl, by_default, plain, f"dropout_p={rate} without training= (its default is False) equals no dropout",
                size=tolerance.unchanged_size(plain))


@claim("DROP-3")
@given(seed=SEEDS, rate=st.sampled_from([0.25, 0.5]))
def test_dropout_while_training_is_reproducible(impl, seed, rate):
    """training=True drops attention weights: the output differs from evaluation's, and is the same for the same
    generator state."""
    x, w = _mha_inputs(seed)
    first = impl.multi_head_attention(x, x, x, w, 2, dropout_p=rate, training=True, generator=Seeded(seed))
    again = impl.multi_head_attention(x, x, x, w, 2, dropout_p=rate, training=True, generator=Seeded(seed))
    check.equal(impl, first, again, "training=True with the same generator state gives the same output")
    plain = impl.multi_head_attention(x, x, x, w, 2, dropout_p=rate, training=False)
    check.holds(impl, bool(np.abs(first - plain).max() > 1e-3 * tolerance.magnitude(plain)),
                f"training=True with dropout_p={rate} changes the output (weights are dropped)",
                ["the output equals evaluation's: dropout_p is ignored while training"], [first, plain])
