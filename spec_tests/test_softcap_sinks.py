"""Chapter: softcapping and attention sinks (docs/softcap_sinks.md). Claims SOFT-1, SOFT-2.

    softcap=cap : the scaled scores become cap · tanh(S / cap), before the mask     (Gemma 2; FlashAttention, ONNX)
    sinks=σ     : one logit per head joins each row's denominator and carries no value   (gpt-oss; FlashAttention, MLX)

        P_ij = exp(S_ij - m_i) / (exp(σ - m_i) + Σ_j' exp(S_ij' - m_i)),   m_i = max(σ, max_j S_ij)

Relations: a huge cap is no cap; a sink of -inf is no sink; a row with a sink sums to less than 1;
a row with every key hidden outputs exactly 0, sink or not. The keywords are optional
(CONTRACT.md, "Softcapping and sinks"): without them these claims are "not implemented".
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reference
from spec_tests.harness import carried, check, feature_rows, tolerance
from spec_tests.harness.feedback import SpecFailure
from spec_tests.harness.strategies import HEAD_DIMS, SEEDS, normal, random_mask
from spec_tests.harness.subject import not_applicable

claim = pytest.mark.claim
SDPA = "scaled_dot_product_attention"
SIZES = st.integers(1, 8)
CAPS = st.sampled_from([0.5, 1.0, 2.0, 5.0, 30.0])


@st.composite
def score_cases(draw, magnitude=st.sampled_from([1.0, 4.0])):
    """q (H, L_q, d), k (H, L_k, d), v (H, L_k, d_v); a mask with holes (some rows dead) or none; is_causal."""
    H, L_q, L_k = draw(st.integers(1, 3), label="H"), draw(SIZES, label="L_q"), draw(SIZES, label="L_k")
    d, d_v, seed = draw(HEAD_DIMS, label="d"), draw(HEAD_DIMS, label="d_v"), draw(SEEDS, label="seed")
    size = draw(magnitude, label="magnitude")
    masked = draw(st.booleans(), label="masked")
    mask = random_mask(seed + 3, (H, L_q, L_k), 0.7, dead_rows=draw(st.integers(0, 1), label="dead rows")) \
        if masked else None
    causal = draw(st.booleans(), label="is_causal") and L_q <= L_k
    q, k = normal(seed, (H, L_q, d), scale=size), normal(seed + 1, (H, L_k, d), scale=size)
    v = normal(seed + 2, (H, L_k, d_v))
    return q, k, v, dict(mask=mask, is_causal=causal) if masked else dict(is_causal=causal)


# ---------------------------------------------------------------------------------- SOFT-1
@claim("SOFT-1")
@given(case=score_cases(), cap=CAPS)
def test_softcap_matches_the_reference(impl, case, cap):
    """softcap=cap gives softmax(cap · tanh(S / cap)) over the visible keys, S the scaled scores."""
    q, k, v, kw = case
    feature_rows.oracle(impl, SDPA, q, k, v, softcap=cap, **kw)


@claim("SOFT-1")
@given(case=score_cases(), cap=CAPS)
def test_softcap_leaves_hidden_keys_at_exactly_zero(impl, case, cap):
    """The cap acts before the mask: a hidden key keeps weight exactly 0 (its score is not turned into -cap).
    Judged on the keys your own call without the cap hides (a key it shows is the masks chapter's to judge)."""
    q, k, _, kw = case
    p = impl.attention_weights(q, k, softcap=cap, **kw)
    visible = np.ones(p.shape, dtype=bool)
    if kw.get("mask") is not None:
        visible &= kw["mask"]
    if kw["is_causal"]:
        L_q, L_k = p.shape[-2:]
        visible &= np.arange(L_k) <= np.arange(L_q)[:, None] + (L_k - L_q)
    visible = visible | (np.asarray(impl.attention_weights(q, k, **kw)) != 0)
    check.exactly(impl, np.where(visible, 0.0, p), np.zeros_like(p),
                  f"with softcap={cap}, every hidden key's weight is exactly 0")


@claim("SOFT-1")
@given(case=score_cases(magnitude=st.sampled_from([10.0, 30.0])), cap=st.sampled_from([0.5, 1.0, 2.0]))
def test_capped_weights_differ_by_at_most_exp_2cap(impl, case, cap):
    """Capped scores lie in (-cap, cap), so two visible keys' weights differ by a factor of at most exp(2 cap),
    however large the raw scores (here up to hundreds)."""
    q, k, _, _ = case
    p = impl.attention_weights(q, k, softcap=cap)
    ratio = p.max(axis=-1) / p.min(axis=-1)
    slack = 1 + 1e-3 + 64 * impl.eps  # the weights and the capped scores are rounded in the implementation's dtype
    check.holds(impl, bool((ratio <= np.exp(2 * cap) * slack).all()),
                f"with softcap={cap}, max/min weight of each row is at most exp(2 * {cap}) = {np.exp(2 * cap):.4g}",
                [f"largest ratio seen: {ratio.max():.4g}",
                 "a larger ratio means the scores were not squashed by cap · tanh(S / cap) before the softmax"], [p])


@claim("SOFT-1")
@given(case=score_cases(magnitude=st.just(1.0)))
def test_a_huge_cap_is_no_cap(impl, case):
    """A huge cap equals no softcap: tanh(x) = x to within x^3 / 3 near 0.

    Huge is 10 / sqrt(eps) times the largest score (eps: the dtype's machine epsilon), so (S / cap)^2 / 3 is
    below eps / 300; and no larger, so that S / cap stays a normal number of the dtype and the cap fits in it
    (float16's largest is 65504: an implementation that caps in float16, as Gemma 2's code does in the model's
    dtype, is judged on a cap its dtype holds)."""
    q, k, v, kw = case
    s_max = float(np.abs(q @ np.swapaxes(k, -1, -2)).max(initial=0.0)) / np.sqrt(q.shape[-1])  # the scores' size
    cap = float(f"{10 * max(s_max, 1.0) / np.sqrt(impl.eps):.2g}")
    feature_rows.neutral(impl, (q, k, v), kw, dict(softcap=cap), f"softcap={cap:g} equals no softcap")


# ---------------------------------------------------------------------------------- SOFT-2
def _sinks(seed, H):
    """One sink logit per head, (H,), around the scores' size."""
    return normal(seed + 9, (H,), scale=2.0)


@claim("SOFT-2")
@given(case=score_cases(), seed=SEEDS)
def test_sinks_match_the_reference(impl, case, seed):
    """sinks=σ (one logit per head) joins each row's denominator: the output equals the reference's."""
    q, k, v, kw = case
    feature_rows.oracle(impl, SDPA, q, k, v, sinks=_sinks(seed, q.shape[0]), **kw)


@claim("SOFT-2")
@given(case=score_cases(), seed=SEEDS)
def test_rows_with_a_sink_sum_to_less_than_one(impl, case, seed):
    """Each row of weights with a visible key sums to 1 - exp(σ - m) / z < 1: the sink takes a share and gives no value."""
    q, k, _, kw = case
    if kw.get("scale") is None:  # a default scale that fails SDPA-4 is charged there
        kw = {**kw, **carried.scale_if_charged(impl, q, "attention_weights")}
    sinks = _sinks(seed, q.shape[0])
    p = impl.attention_weights(q, k, sinks=sinks, **kw)
    sums = p.sum(axis=-1)  # (H, L_q)
    share = 1 - reference.attention_weights(q, k, sinks=sinks, **kw).sum(axis=-1)  # the sink's share of each row
    plain = np.asarray(impl.attention_weights(q, k, **kw), dtype=np.float64)
    right = (np.abs(plain - reference.attention_weights(q, k, **kw)) <= 1e-3).all(axis=-1)  # else the masks' bug
    rows = (share > 1e-2) & right  # rows where the sink takes a share every dtype can see
    check.holds(impl, bool((sums[rows] < 1 - share[rows] / 2).all()),
                "with a sink, every row of weights sums to less than 1 (1 minus the sink's share)",
                [f"sink logits: {np.round(sinks, 4)}", f"row sums seen:\n{np.round(sums, 6)}",
                 f"row sums expected:\n{np.round(1 - share, 6)}",
                 "a row summing to 1 means exp(sink) is missing from the softmax's denominator"], [p])
    feature_rows.oracle(impl, "attention_weights", q, k, sinks=sinks, **kw)


@claim("SOFT-2")
@given(case=score_cases())
def test_a_sink_of_minus_infinity_is_no_sink(impl, case):
    """sinks = -inf for every head equals no sinks: exp(-inf) = 0 adds nothing to the denominator."""
    q, k, v, kw = case
    feature_rows.neutral(impl, (q, k, v), kw, dict(sinks=np.full(q.shape[0], -np.inf)), "sinks of -inf equal no sinks")


@claim("SOFT-2")
@given(seed=SEEDS, H=st.integers(1, 3), L_q=SIZES, L_k=SIZES, d=HEAD_DIMS, dead=st.integers(1, 3))
def test_a_row_with_every_key_hidden_outputs_zero_with_a_sink(impl, seed, H, L_q, L_k, d, dead):
    """A query that sees no key outputs exactly 0 with a sink too: all its weight goes to the sink, which has no value.
    Judged on the dead rows your own call without a sink answers with 0 (any other is the masks chapter's to judge)."""
    mask = random_mask(seed, (H, L_q, L_k), 0.7, dead_rows=dead)
    q, k = normal(seed, (H, L_q, d)), normal(seed + 1, (H, L_k, d))
    v = normal(seed + 2, (H, L_k, d)) + 3.0  # far from 0, so a value given to the sink shows
    out = impl.scaled_dot_product_attention(q, k, v, mask=mask, sinks=_sinks(seed, H))
    plain = np.asarray(impl.scaled_dot_product_attention(q, k, v, mask=mask))
    dead_rows = ~mask.any(axis=-1) & (plain == 0).all(axis=-1)  # (H, L_q); a dead row not 0 without a sink: MASK-4's
    check.exactly(impl, out[dead_rows], np.zeros_like(out[dead_rows]),
                  "with a sink, rows with no visible key output exactly 0")


@claim("SOFT-1")
@given(seed=SEEDS, L=SIZES, cap=st.sampled_from([0.0, -1.0, float("inf"), float("nan")]))
def test_a_bad_softcap_raises_value_error(impl, seed, L, cap):
    """softcap must be a finite number > 0: 0, a negative cap, inf or NaN is a ValueError."""
    q, k, v = normal(seed, (L, 2)), normal(seed + 1, (L, 2)), normal(seed + 2, (L, 2))
    check.raises_value_error(impl, SDPA, (q, k, v), dict(softcap=cap), what=f"softcap={cap} raises ValueError")


@claim("SOFT-2")
@given(seed=SEEDS, H=st.integers(1, 3), L=SIZES, extra=st.integers(1, 2))
def test_sinks_that_do_not_broadcast_raise_value_error(impl, seed, H, L, extra):
    """sinks must broadcast to the scores' leading dims (one per head): H + extra logits for H heads is a ValueError."""
    q, k, v = normal(seed, (H, L, 2)), normal(seed + 1, (H, L, 2)), normal(seed + 2, (H, L, 2))
    bad = normal(seed + 3, (H + extra,))
    check.raises_value_error(impl, SDPA, (q, k, v), dict(sinks=bad), names=[f"({H + extra},)"],
                             what=f"sinks of shape ({H + extra},) for {H} heads raise ValueError naming the shape")


@claim("SOFT-2")
@given(seed=SEEDS, H=st.integers(1, 3), L=SIZES)
def test_sinks_that_are_not_floats_raise_value_error(impl, seed, H, L):
    """sinks are float logits: an integer array of the right shape is a ValueError too (the contract's "not floats")."""
    q, k, v = normal(seed, (H, L, 2)), normal(seed + 1, (H, L, 2)), normal(seed + 2, (H, L, 2))
    check.raises_value_error(impl, SDPA, (q, k, v), dict(sinks=np.arange(H, dtype=np.int64)),
                             what=f"integer sinks of shape ({H},) raise ValueError")


@claim("SOFT-2")
@given(case=score_cases(), seed=SEEDS)
def test_sinks_with_a_bias_match_the_reference(impl, case, seed):
    """With a bias as well (the positional chapter's bias=: ALiBi, T5), the bias is added to the scores and the sink
    joins the denominator of the biased scores: the output equals the reference's."""
    if not impl.has(SDPA, "bias"):
        not_applicable(f"{impl.name}'s scaled_dot_product_attention takes no bias= (the positional chapter's keyword)")
    q, k, v, kw = case
    bias = normal(seed + 5, q.shape[:-1] + (k.shape[-2],))
    try:
        feature_rows.oracle(impl, SDPA, q, k, v, sinks=_sinks(seed, q.shape[0]), bias=bias, **kw)
    except SpecFailure:
        if feature_rows.keyword_charged_elsewhere(impl, (q, k, v), kw, "bias", bias):
            not_applicable("error carried forward: your output with bias= alone already differs from the reference's "
                           "(PE-5, or MASK-4 for a row the bias hides, is charged for it)")
        raise
