"""Chapter: scaled dot-product attention (docs/sdpa.md). Claims SDPA-1 .. SDPA-10.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V          (lecture note 1 §2, lecture note 2 §1.2)

    q (..., L_q, d_k), k (..., L_k, d_k), v (..., L_k, d_v)  ->  out (..., L_q, d_v)
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import reference
from spec_tests.harness import carried, check, feature_rows, tolerance
from spec_tests.harness.strategies import HEAD_DIMS, SEEDS, AttentionCase, attention_cases, normal

claim = pytest.mark.claim
SDPA = "scaled_dot_product_attention"


# ---------------------------------------------------------------------------------- SDPA-1
@claim("SDPA-1")
@given(case=attention_cases(masked=False, causal=False))
@example(case=AttentionCase((), 1, 1, 1, 1, seed=0))
@example(case=AttentionCase((), 2, 3, 4, 2, seed=1))
def test_sdpa_matches_oracle(impl, case):
    """softmax(QK^T/sqrt(d_k))V equals the float64 reference on any shapes."""
    check.oracle(impl, SDPA, case.q, case.k, case.v)


@claim("SDPA-1")
@pytest.mark.parametrize(
    "batch, L_q, L_k, d_k, d_v",
    [((), 1, 1, 1, 1), ((), 3, 5, 4, 4), ((), 5, 3, 4, 2), ((2,), 1, 7, 13, 3),
     ((2, 3), 4, 4, 8, 16), ((1, 2, 3), 2, 6, 3, 1)],
    ids=["L=1", "Lq<Lk", "Lq>Lk,dk!=dv", "one-query", "4-D", "5-D"],
)
def test_sdpa_output_shape(impl, batch, L_q, L_k, d_k, d_v):
    """The output is (..., L_q, d_v): L_q from q, d_v from v, leading dims kept."""
    case = AttentionCase(batch, L_q, L_k, d_k, d_v, seed=7)
    out = check.oracle(impl, SDPA, case.q, case.k, case.v)
    check.shape(impl, out, (*batch, L_q, d_v), f"output shape for q {case.q.shape}, k {case.k.shape}, v {case.v.shape}")


@claim("SDPA-1")
@pytest.mark.parametrize("q_lead, kv_lead", [((2, 1), (1, 3)), ((2, 3), ()), ((4,), (1,))],
                         ids=["2x1-vs-1x3", "batched-q-shared-kv", "4-vs-1"])
def test_sdpa_broadcasts_leading_dims(impl, q_lead, kv_lead):
    """Leading dims of q, k, v broadcast like NumPy's matmul."""
    q = normal(1, (*q_lead, 3, 4))
    k, v = normal(2, (*kv_lead, 5, 4)), normal(3, (*kv_lead, 5, 2))
    out = check.oracle(impl, SDPA, q, k, v)
    check.shape(impl, out, (*np.broadcast_shapes(q_lead, kv_lead), 3, 2), "broadcast output shape")


# ---------------------------------------------------------------------------------- SDPA-2
def _visible_rows(case: AttentionCase) -> np.ndarray:
    allowed = np.broadcast_to(reference.visible(case.mask, case.is_causal, case.L_q, case.L_k), case.scores_shape)
    return allowed, allowed.any(axis=-1)


@claim("SDPA-2")
@given(case=attention_cases(causal=False))  # masks whose rows each keep a visible key: SDPA-2 is about visible rows
def test_attention_weights_are_distributions(impl, case):
    """attention_weights: equal to the reference, >= 0, each row with a visible key sums to 1."""
    p = check.oracle(impl, "attention_weights", case.q, case.k, **case.kwargs)
    if case.kwargs.get("mask") is not None and carried.masking_charged(impl, "attention_weights"):
        return  # judged above on its own rows without the mask: its masking is the masks chapter's (carried.py, rule 4)
    check.holds(impl, bool((p >= 0).all()), "every attention weight is >= 0",
                [f"smallest weight seen: {p.min():.3g}"], [p])
    _, live = _visible_rows(case)
    sums = p.sum(axis=-1)
    check.close(impl, np.where(live, sums, 1.0), np.ones_like(sums), "each row with a visible key sums to 1",
                size=tolerance.attention_output_size(1.0))


@claim("SDPA-2")
@given(case=attention_cases(causal=False, dims=st.integers(1, 6), lengths=st.integers(1, 9)))
def test_sdpa_with_identity_values_returns_the_weights(impl, case):
    """With V = I (one-hot values), the output is the weight matrix P itself: rows are distributions."""
    eye = np.broadcast_to(np.eye(case.L_k), (*case.batch, case.L_k, case.L_k)).copy()
    p = check.oracle(impl, SDPA, case.q, case.k, eye, **case.kwargs)
    if case.kwargs.get("mask") is not None and carried.masking_charged(impl):
        return  # judged above on its own rows without the mask: its masking is the masks chapter's (carried.py, rule 4)
    check.holds(impl, bool((p >= 0).all()), "every weight (output with V = I) is >= 0",
                [f"smallest seen: {p.min():.3g}"], [p])
    _, live = _visible_rows(case)
    sums = p.sum(axis=-1)
    check.close(impl, np.where(live, sums, 1.0), np.ones_like(sums),
                "with V = I each output row (a row of P) sums to 1", size=tolerance.attention_output_size(eye))


@claim("SDPA-2")
@given(case=attention_cases(causal=False))
def test_sdpa_equals_weights_times_values(impl, case):
    """scaled_dot_product_attention(q, k, v) == attention_weights(q, k) @ v: one P behind both."""
    out = impl.scaled_dot_product_attention(case.q, case.k, case.v, **case.kwargs)
    p = impl.attention_weights(case.q, case.k, **case.kwargs)
    check.close(impl, out, p @ case.v, "sdpa(q, k, v) equals attention_weights(q, k) @ v",
                size=tolerance.attention_output_size(case.v))


# ---------------------------------------------------------------------------------- SDPA-3
@claim("SDPA-3")
@given(case=attention_cases(masked=False, causal=False))
def test_output_rows_are_convex_combinations_of_values(impl, case):
    """Each output row lies inside the column-wise [min, max] of the rows of V it may see."""
    out = impl.scaled_dot_product_attention(case.q, case.k, case.v, **case.kwargs)
    allowed, live = _visible_rows(case)
    v = np.broadcast_to(case.v, (*case.batch, case.L_k, case.d_v))[..., None, :, :]  # (..., 1, L_k, d_v)
    seen = allowed[..., None]  # (..., L_q, L_k, 1)
    lo = np.where(seen, v, np.inf).min(axis=-2)  # (..., L_q, d_v)
    hi = np.where(seen, v, -np.inf).max(axis=-2)
    slack = 64 * impl.eps * float(np.abs(case.v).max())
    inside = (out >= lo - slack) & (out <= hi + slack)
    bad = live[..., None] & ~inside
    check.holds(impl, not bad.any(), "each output row lies within the min and max of the visible rows of V",
                [f"{int(bad.sum())} value(s) outside, first at index {tuple(np.argwhere(bad)[0])}"] if bad.any() else [],
                [out])


# ---------------------------------------------------------------------------------- SDPA-4
@claim("SDPA-4")
@pytest.mark.parametrize("d_k", [1, 16, 64, 256])
def test_default_scale_keeps_score_variance_near_one(impl, d_k):
    """For i.i.d. N(0, 1) q and k, scores q.k/sqrt(d_k) have variance ~1 whatever d_k is.

    The scores are read back from the weights: with V = I the output is P, and
    log P[i, j] - mean_j log P[i, j] = S[i, j] - mean_j S[i, j] for every visible j.
    """
    L = 32
    q, k = normal(11, (16, L, d_k)), normal(12, (16, L, d_k))
    p = impl.scaled_dot_product_attention(q, k, np.eye(L))
    with np.errstate(divide="ignore"):
        logp = np.log(p)
    ok = np.isfinite(logp).all(axis=-1)  # rows whose weights all stayed above underflow
    centred = logp[ok] - logp[ok].mean(axis=-1, keepdims=True)
    variance = float((centred**2).sum(axis=-1).mean() / (L - 1))
    check.holds(impl, ok.mean() > 0.9 and 0.75 < variance < 1.33,
                f"the scaled scores' variance is close to 1 for d_k = {d_k}",
                [f"variance seen {variance:.3g} over {int(ok.sum())} rows; ~{d_k} means no scaling, "
                 f"~1/{d_k} means scaling by 1/d_k, ~1 is right"], [p])


@claim("SDPA-4")
@given(case=attention_cases(masked=False, causal=False),
       scale=st.sampled_from([0.0, 0.25, 1.0, 3.0]) | st.floats(0.01, 4.0))
def test_explicit_scale_is_honoured(impl, case, scale):
    """scale= replaces 1/sqrt(d_k): softmax(scale * QK^T) V."""
    check.oracle(impl, SDPA, case.q, case.k, case.v, scale=scale)


@claim("SDPA-4")
@given(case=attention_cases(masked=False, causal=False, dims=st.sampled_from([2, 3, 13, 16])))
def test_default_scale_is_one_over_sqrt_dk(impl, case):
    """Leaving scale out is the same as scale = 1/sqrt(d_k)."""
    default = impl.scaled_dot_product_attention(case.q, case.k, case.v)
    explicit = impl.scaled_dot_product_attention(case.q, case.k, case.v, scale=1.0 / np.sqrt(case.d_k))
    check.close(impl, default, explicit, "scale=None equals scale=1/sqrt(d_k)", size=tolerance.attention_output_size(case.v))


# ---------------------------------------------------------------------------------- SDPA-5
def _big(impl) -> float:
    """Score magnitude for the stability checks: 1e4, except where float16 would overflow q.k itself."""
    return 1e3 if impl.dtype == "float16" else 1e4


@claim("SDPA-5")
@given(case=attention_cases(masked=False, causal=False, dims=st.integers(1, 8)))
def test_large_scores_give_finite_correct_outputs(impl, case):
    """Scores of magnitude ~1e4 (naive exp overflows) still give finite outputs equal to the reference."""
    s = np.sqrt(_big(impl))
    check.oracle(impl, SDPA, case.q * s, case.k * s, case.v)


@claim("SDPA-5")
@given(seed=SEEDS, d_k=st.integers(1, 8))
def test_each_row_is_stabilised_by_its_own_max(impl, seed, d_k):
    """Rows of scores on scales 1e-3 .. 1e4 side by side are each right (a global max underflows the small ones)."""
    row_scale = np.array([1e-3, 1.0, 30.0, _big(impl)])[:, None]  # (4, 1): row r's scores are ~row_scale[r]
    q = normal(seed, (4, d_k)) * row_scale
    check.oracle(impl, SDPA, q, normal(seed + 1, (6, d_k)), normal(seed + 2, (6, 3)))


# ---------------------------------------------------------------------------------- SDPA-6
@claim("SDPA-6")
@given(case=attention_cases(masked=False, causal=False), perm_seed=SEEDS)
def test_permuting_queries_permutes_outputs(impl, case, perm_seed):
    perm = np.random.default_rng(perm_seed).permutation(case.L_q)
    out = impl.scaled_dot_product_attention(case.q, case.k, case.v)
    out_perm = impl.scaled_dot_product_attention(case.q[..., perm, :], case.k, case.v)
    check.close(impl, out_perm, out[..., perm, :], "sdpa(q[perm]) == sdpa(q)[perm]", size=tolerance.attention_output_size(case.v))


@claim("SDPA-6")
@given(case=attention_cases(masked=False, causal=False), perm_seed=SEEDS)
def test_permuting_keys_and_values_together_changes_nothing(impl, case, perm_seed):
    perm = np.random.default_rng(perm_seed).permutation(case.L_k)
    out = impl.scaled_dot_product_attention(case.q, case.k, case.v)
    out_perm = impl.scaled_dot_product_attention(case.q, case.k[..., perm, :], case.v[..., perm, :])
    check.close(impl, out_perm, out, "sdpa(q, k[perm], v[perm]) == sdpa(q, k, v)", size=tolerance.attention_output_size(case.v))


# ---------------------------------------------------------------------------------- SDPA-7
@claim("SDPA-7")
@given(case=attention_cases(masked=False, causal=False), a=st.sampled_from([2.0, -0.5, 0.0, 3.0]), b=st.sampled_from([1.0, -2.0, 0.25]))
def test_output_is_linear_in_values(impl, case, a, b):
    """sdpa(q, k, a v1 + b v2) == a sdpa(q, k, v1) + b sdpa(q, k, v2)."""
    v2 = normal(case.seed + 9, case.v.shape)
    lhs = impl.scaled_dot_product_attention(case.q, case.k, a * case.v + b * v2, **case.kwargs)
    rhs = a * impl.scaled_dot_product_attention(case.q, case.k, case.v, **case.kwargs) + \
        b * impl.scaled_dot_product_attention(case.q, case.k, v2, **case.kwargs)
    size = tolerance.attention_output_size(np.abs(a) * np.abs(case.v) + np.abs(b) * np.abs(v2))
    check.close(impl, lhs, rhs, f"sdpa(q, k, {a} v1 + {b} v2) == {a} sdpa(q, k, v1) + {b} sdpa(q, k, v2)", size=size)


# ---------------------------------------------------------------------------------- SDPA-8
@claim("SDPA-8")
@given(seed=SEEDS, L_q=st.integers(1, 7), L_k=st.integers(1, 7), d=HEAD_DIMS,
       b=st.integers(0, 2), h=st.integers(0, 1), causal=st.booleans())
def test_batch_and_head_slices_are_independent(impl, seed, L_q, L_k, d, b, h, causal):
    """Replacing slice (b, h) of q, k, v by very different values changes no other slice's output."""
    q, k, v = normal(seed, (3, 2, L_q, d)), normal(seed + 1, (3, 2, L_k, d)), normal(seed + 2, (3, 2, L_k, d))
    out = impl.scaled_dot_product_attention(q, k, v, is_causal=causal)
    q2, k2, v2 = q.copy(), k.copy(), v.copy()
    q2[b, h], k2[b, h], v2[b, h] = 30 * normal(seed + 3, (L_q, d)), 30 * normal(seed + 4, (L_k, d)), 1e3 * normal(seed + 5, (L_k, d))
    out2 = impl.scaled_dot_product_attention(q2, k2, v2, is_causal=causal)
    others = np.ones((3, 2), dtype=bool)
    others[b, h] = False
    check.close(impl, out2[others], out[others], f"changing slice [{b}, {h}] leaves every other slice's output unchanged",
                size=tolerance.attention_output_size(v))


# ---------------------------------------------------------------------------------- SDPA-9: degenerate sizes
EMPTY_BATCHES = st.sampled_from([(), (2,), (2, 3)])


@claim("SDPA-9")
@given(batch=EMPTY_BATCHES, L_k=st.integers(1, 5), d_k=HEAD_DIMS, d_v=HEAD_DIMS, seed=SEEDS)
def test_no_queries_give_an_empty_output_of_the_right_shape(impl, batch, L_k, d_k, d_v, seed):
    """L_q = 0 is legal: the output is (..., 0, d_v) and the weights (..., 0, L_k), with nothing in them."""
    q, k, v = normal(seed, (*batch, 0, d_k)), normal(seed + 1, (*batch, L_k, d_k)), normal(seed + 2, (*batch, L_k, d_v))
    check.shape(impl, impl.scaled_dot_product_attention(q, k, v), (*batch, 0, d_v),
                "with no queries (L_q = 0) the output is (..., 0, d_v)")
    check.shape(impl, impl.attention_weights(q, k), (*batch, 0, L_k),
                "with no queries (L_q = 0) the weights are (..., 0, L_k)")


@claim("SDPA-9")
@given(batch=EMPTY_BATCHES, L_q=st.integers(1, 5), d_k=HEAD_DIMS, d_v=HEAD_DIMS, seed=SEEDS, causal=st.booleans())
def test_no_keys_make_every_row_dead(impl, batch, L_q, d_k, d_v, seed, causal):
    """L_k = 0 is legal: every query sees no key, so every output row is exactly 0 (as for a fully masked row),
    and the weights are (..., L_q, 0). Not NaN (0 / 0), not an error from a maximum over no keys."""
    q, k, v = normal(seed, (*batch, L_q, d_k)), normal(seed + 1, (*batch, 0, d_k)), normal(seed + 2, (*batch, 0, d_v))
    out = impl.scaled_dot_product_attention(q, k, v, is_causal=causal)
    if "MASK-4" in carried.masking_charged(impl, alone=True):  # its rows that see no key are wrong already, charged to MASK-4:
        check.shape(impl, out, (*batch, L_q, d_v), "with no keys (L_k = 0) the output is (..., L_q, d_v)")  # these too
    else:
        check.exactly(impl, out, np.zeros((*batch, L_q, d_v)), "with no keys (L_k = 0) every output row is exactly 0")
    check.shape(impl, impl.attention_weights(q, k, is_causal=causal), (*batch, L_q, 0),
                "with no keys (L_k = 0) the weights are (..., L_q, 0)")


@claim("SDPA-9")
@given(seed=SEEDS, L_q=st.integers(1, 4), L_k=st.integers(1, 6),
       dims=st.sampled_from([(128, 192), (192, 128), (256, 64)]))
def test_large_head_dims_with_d_v_unlike_d_k(impl, seed, L_q, L_k, dims):
    """Head dims of today's models, d_k = 128 with d_v = 192 (DeepSeek's MLA) and the reverse: the scale is
    1/sqrt(d_k), never 1/sqrt(d_v), and the output is (..., L_q, d_v)."""
    d_k, d_v = dims
    q, k, v = normal(seed, (2, L_q, d_k)), normal(seed + 1, (2, L_k, d_k)), normal(seed + 2, (2, L_k, d_v))
    check.oracle(impl, SDPA, q, k, v)


# ---------------------------------------------------------------------------------- SDPA-10: a negative scale
@claim("SDPA-10")
@given(case=attention_cases(masked=None, causal=None), scale=st.sampled_from([-0.125, -0.5, -1.0, -3.0]))
def test_a_negative_scale_is_used_as_given(impl, case, scale):
    """scale < 0 is legal and used as given: softmax(scale · Q K^T) then prefers the least similar key."""
    feature_rows.oracle(impl, SDPA, case.q, case.k, case.v, scale=scale, feature=("scale",), **case.kwargs)


@claim("SDPA-10")
@given(case=attention_cases(masked=False, causal=None), scale=st.sampled_from([0.125, 0.5, 1.0, 3.0]))
def test_a_negative_scale_equals_the_negated_keys(impl, case, scale):
    """softmax(-s · Q K^T) = softmax(s · Q (-K)^T): a negative scale equals the positive one on negated keys
    (an implementation that takes |scale|, or rejects it, breaks this)."""
    negative = impl.scaled_dot_product_attention(case.q, case.k, case.v, scale=-scale, **case.kwargs)
    negated = impl.scaled_dot_product_attention(case.q, -case.k, case.v, scale=scale, **case.kwargs)
    check.close(impl, negative, negated, f"scale={-scale} equals scale={scale} with K negated",
                size=tolerance.attention_output_size(case.v))
