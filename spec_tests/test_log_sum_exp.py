"""Chapter: the log-sum-exp and merging partial results (docs/log_sum_exp.md). Claims LSE-1, LSE-2.

    return_lse=True : (out, lse), lse_i = log sum_{j visible} exp(S_ij), S the scores the softmax sees;
                      -inf for a row with no visible key                 (FlashAttention's softmax_lse)
    merge_attention(out1, lse1, out2, lse2) -> (out, lse):
                      lse = log(exp(lse1) + exp(lse2)),  out = exp(lse1 - lse) out1 + exp(lse2 - lse) out2

Relation: attention over two disjoint key sets, merged by their log-sum-exp, equals attention over
their union (split-KV decoding, ring attention). The keyword and the function are optional
(CONTRACT.md, "Log-sum-exp and merging"): without them these claims are "not implemented".
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import reference
from spec_tests.harness import carried, check, feature_rows, tolerance
from spec_tests.harness.feedback import SpecFailure
from spec_tests.harness.strategies import HEAD_DIMS, SEEDS, normal, random_mask
from spec_tests.harness.subject import not_applicable

claim = pytest.mark.claim
SDPA = "scaled_dot_product_attention"
SIZES = st.integers(1, 8)


@st.composite
def lse_cases(draw, scales=st.sampled_from([1.0, 3.0])):
    """q (H, L_q, d), k (H, L_k, d), v (H, L_k, d_v) and a mask (some rows dead) or none."""
    H, L_q, L_k = draw(st.integers(1, 3), label="H"), draw(SIZES, label="L_q"), draw(SIZES, label="L_k")
    d, d_v, seed = draw(HEAD_DIMS, label="d"), draw(HEAD_DIMS, label="d_v"), draw(SEEDS, label="seed")
    size = draw(scales, label="magnitude")
    masked = draw(st.booleans(), label="masked")
    mask = random_mask(seed + 3, (H, L_q, L_k), 0.7, dead_rows=draw(st.integers(0, 1), label="dead rows")) \
        if masked else None
    q, k = normal(seed, (H, L_q, d), scale=size), normal(seed + 1, (H, L_k, d), scale=size)
    return q, k, normal(seed + 2, (H, L_k, d_v)), mask


# ---------------------------------------------------------------------------------- LSE-1
@claim("LSE-1")
@given(case=lse_cases())
def test_return_lse_matches_the_reference(impl, case):
    """return_lse=True returns (out, lse): out as without it, lse_i = log sum_{j visible} exp(S_ij) of the scaled scores."""
    q, k, v, mask = case
    out, lse = check.oracle(impl, SDPA, q, k, v, mask=mask, return_lse=True)
    plain = impl.scaled_dot_product_attention(q, k, v, mask=mask)
    check.close(impl, out, plain, "the output with return_lse=True equals the output without it",
                size=tolerance.attention_output_size(v))


@claim("LSE-1")
@pytest.mark.parametrize("keyword", ["softcap", "bias"])
@given(case=lse_cases())
def test_lse_of_capped_or_biased_scores_matches_the_reference(impl, keyword, case):
    """With softcap= or bias= (the later chapters' score keywords), lse is taken over the scores the softmax
    normalises: capped, or with the bias added. When the output itself already differs from the reference's with
    that keyword (its own chapter's claim, SOFT-1 or PE-5, charged there), this item is not applicable."""
    if not impl.has(SDPA, keyword):
        not_applicable(f"{impl.name}'s scaled_dot_product_attention takes no {keyword}= (a later chapter's keyword)")
    q, k, v, mask = case
    value = 2.0 if keyword == "softcap" else normal(int(abs(q.flat[0]) * 1e6) + 5, q.shape[:-1] + (k.shape[-2],))
    try:
        check.oracle(impl, SDPA, q, k, v, mask=mask, return_lse=True, **{keyword: value})
    except SpecFailure:
        if feature_rows.keyword_charged_elsewhere(impl, (q, k, v), {"mask": mask}, keyword, value):
            not_applicable(f"error carried forward: your output with {keyword}= already differs from the reference's "
                           f"({'SOFT-1' if keyword == 'softcap' else 'PE-5'} is charged for it)")
        raise


DEAD_ROWS_CHARGED = ("error carried forward: your attention's masking fails the masks chapter's claims, which are "
                     "charged for it; a row made dead by a mask cannot be judged here")


@claim("LSE-1")
@given(case=lse_cases(), dead=st.integers(1, 3))
def test_a_dead_row_has_lse_minus_infinity(impl, case, dead):
    """A query that sees no key has lse = -inf exactly (the log of an empty sum) and outputs exactly 0."""
    q, k, v, _ = case
    if carried.masking_charged(impl, alone=True):  # its masking fails the masks chapter, charged there
        not_applicable(DEAD_ROWS_CHARGED)
    mask = random_mask(int(abs(q[0, 0, 0]) * 1e6), q.shape[:-1] + (k.shape[-2],), 0.7, dead_rows=dead)
    out, lse = impl.scaled_dot_product_attention(q, k, v, mask=mask, return_lse=True)
    dead_rows = ~mask.any(axis=-1)
    check.exactly(impl, lse[dead_rows], np.full(int(dead_rows.sum()), -np.inf),
                  "a row with no visible key has lse exactly -inf")
    check.exactly(impl, out[dead_rows], np.zeros_like(out[dead_rows]), "a row with no visible key outputs exactly 0")


@claim("LSE-1")
@given(case=lse_cases(), seed=SEEDS)
def test_lse_with_sinks_holds_the_sink(impl, case, seed):
    """With sinks, exp(sink) is inside the sum: lse_i = log(exp(sink) + sum_{j visible} exp(S_ij)) on every row that
    sees a key, so that P_ij = exp(S_ij - lse_i) still holds."""
    q, k, v, _ = case  # no mask: the sink's place in the sum alone (masks with sinks: SOFT-2; dead rows: below)
    check.oracle(impl, SDPA, q, k, v, sinks=normal(seed, (q.shape[0],), 2.0), return_lse=True)


@claim("LSE-1")
@given(case=lse_cases(), seed=SEEDS, dead=st.integers(1, 3))
def test_a_dead_row_with_a_sink_outputs_zero_and_has_lse_sink_or_minus_infinity(impl, case, seed, dead):
    """A row that sees no key, with a sink: output exactly 0; lse the sink (the log of a denominator holding exp(sink)
    alone) or -inf (the log of an empty sum over keys). Libraries differ here, and the contract takes both."""
    q, k, v, _ = case
    if carried.masking_charged(impl, alone=True):  # its masking fails the masks chapter, charged there
        not_applicable(DEAD_ROWS_CHARGED)
    sinks = normal(seed, (q.shape[0],), 2.0)
    mask = random_mask(seed + 4, q.shape[:-1] + (k.shape[-2],), 0.7, dead_rows=dead)
    out, lse = impl.scaled_dot_product_attention(q, k, v, mask=mask, sinks=sinks, return_lse=True)
    rows = ~mask.any(axis=-1)  # (H, L_q)
    check.exactly(impl, out[rows], np.zeros_like(out[rows]), "a row with no visible key outputs exactly 0, sink or not")
    seen = lse[rows]
    if not np.isneginf(seen).all():
        sink = np.broadcast_to(sinks[:, None], rows.shape)[rows]
        check.close(impl, seen, sink, "a row with no visible key has lse = its sink (or -inf on every such row)",
                    size=tolerance.lse_size(sink))


@claim("LSE-1")
@given(seed=SEEDS, L_q=SIZES, L_k=SIZES, d=st.integers(1, 4), big=st.sampled_from([200.0, 2000.0]))
def test_lse_of_large_scores_is_finite(impl, seed, L_q, L_k, d, big):
    """Scores in the hundreds or thousands: lse stays finite and right (m + log sum exp(S - m), never exp(S) alone)."""
    q = normal(seed, (L_q, d))
    k = normal(seed + 1, (L_k, d))
    q = q / np.linalg.norm(q, axis=-1, keepdims=True) * np.sqrt(big)  # scores up to big / sqrt(d) in size
    k = k / np.linalg.norm(k, axis=-1, keepdims=True) * np.sqrt(big)
    v = normal(seed + 2, (L_k, d))
    _, lse = check.oracle(impl, SDPA, q, k, v, return_lse=True)
    check.holds(impl, bool(np.isfinite(lse).all()), f"with scores up to {big / np.sqrt(d):.0f}, every lse is finite",
                [f"lse seen: {lse}", "inf means exp(S) was summed without subtracting the row maximum first"], [lse])


# ---------------------------------------------------------------------------------- LSE-2
@st.composite
def split_cases(draw):
    """An attention problem and a split of its keys into two disjoint sets (a boolean per key, (L_k,))."""
    q, k, v, mask = draw(lse_cases(scales=st.sampled_from([1.0, 3.0])))
    L_k = k.shape[-2]
    how = draw(st.sampled_from(["halves", "random"]), label="split")
    if how == "halves":
        first = np.arange(L_k) < draw(st.integers(0, L_k), label="cut")
    else:
        first = np.random.default_rng(draw(SEEDS, label="split seed")).random(L_k) < 0.5
    return q, k, v, mask, first


def _attention_with_lse(impl, q, k, v, mask):
    """impl's (out, lse) with `mask`; when its masking fails the masks chapter (charged there), built from its own
    calls without the mask, one query row at a time on the keys the row sees (0 and -inf for a row that sees none)."""
    if mask is not None and carried.masking_charged(impl):
        return carried.row_by_row(impl, SDPA, (q, k, v), {"mask": mask, "return_lse": True}, dead_lse=-np.inf)
    return impl.scaled_dot_product_attention(q, k, v, mask=mask, return_lse=True)


def _with(mask, keys, shape):
    """mask AND the key set `keys` (L_k,), broadcast to `shape`."""
    both = np.broadcast_to(keys, shape)
    return both if mask is None else mask & both


@claim("LSE-2")
@given(case=split_cases())
def test_merging_two_halves_equals_the_whole(impl, case):
    """Attention over K_1 and over K_2 (disjoint), merged by merge_attention, equals attention over K_1 ∪ K_2."""
    q, k, v, mask, first = case
    shape = q.shape[:-1] + (k.shape[-2],)
    out1, lse1 = _attention_with_lse(impl, q, k, v, _with(mask, first, shape).copy())
    out2, lse2 = _attention_with_lse(impl, q, k, v, _with(mask, ~first, shape).copy())
    merged, lse = impl.merge_attention(out1, lse1, out2, lse2)
    whole, whole_lse = _attention_with_lse(impl, q, k, v, mask)
    split = f"keys {np.flatnonzero(first).tolist()} and {np.flatnonzero(~first).tolist()}"
    check.close(impl, merged, whole, f"attention over {split}, merged, equals attention over all keys",
                size=tolerance.attention_output_size(v))
    finite = np.isfinite(whole_lse)
    check.exactly(impl, np.isfinite(lse), finite, "the merged lse is -inf exactly where no key of either half is visible")
    check.close(impl, lse[finite], whole_lse[finite], f"the merged lse over {split} equals the lse over all keys",
                size=tolerance.lse_size(whole_lse[finite]))


@claim("LSE-2")
@given(case=split_cases())
def test_merge_attention_matches_the_reference(impl, case):
    """merge_attention on partial results of the reference's own equals the reference's merge."""
    q, k, v, mask, first = case
    shape = q.shape[:-1] + (k.shape[-2],)
    out1, lse1 = reference.scaled_dot_product_attention(q, k, v, mask=_with(mask, first, shape), return_lse=True)
    out2, lse2 = reference.scaled_dot_product_attention(q, k, v, mask=_with(mask, ~first, shape), return_lse=True)
    check.oracle(impl, "merge_attention", out1, lse1, out2, lse2)


@claim("LSE-2")
@given(seed=SEEDS, L_q=st.integers(1, 6), d_v=st.integers(1, 4), base=st.sampled_from([100.0, 1000.0]),
       empty_half=st.booleans())
@example(seed=0, L_q=3, d_v=2, base=1000.0, empty_half=True)
def test_merging_partial_results_with_large_lse(impl, seed, L_q, d_v, base, empty_half):
    """lse in the hundreds or thousands (large scores): the merge is finite and right. exp(lse_k) alone overflows past
    88 in float32 and 709 in float64; each half's weight is exp(lse_k - lse), from the difference (np.logaddexp)."""
    out1, out2 = normal(seed, (L_q, d_v)), normal(seed + 1, (L_q, d_v))
    lse1, lse2 = base + normal(seed + 2, (L_q,)), base + normal(seed + 3, (L_q,))
    if empty_half:  # the first row's second half saw no key
        lse2[0] = -np.inf
    out, lse = check.oracle(impl, "merge_attention", out1, lse1, out2, lse2)
    check.holds(impl, bool(np.isfinite(out).all() and np.isfinite(lse).all()),
                f"with lse near {base:.0f}, the merged output and lse are finite",
                ["NaN or inf means exp(lse) was taken without subtracting the larger lse first"], [out, lse])


@claim("LSE-2")
@given(seed=SEEDS, L_q=st.integers(2, 6), d=st.integers(1, 4))
def test_merging_mismatched_halves_raises_value_error(impl, seed, L_q, d):
    """Two partial results of different shapes cannot be merged: ValueError naming the shapes."""
    out1, out2 = normal(seed, (L_q, d)), normal(seed + 1, (L_q - 1, d))
    lse1, lse2 = normal(seed + 2, (L_q,)), normal(seed + 3, (L_q - 1,))
    check.raises_value_error(impl, "merge_attention", (out1, lse1, out2, lse2), {},
                             names=[f"({L_q}, {d})", f"({L_q - 1}, {d})"],
                             what=f"merging halves of shapes ({L_q}, {d}) and ({L_q - 1}, {d}) raises ValueError")


@claim("LSE-2")
@given(seed=SEEDS, L_q=st.integers(1, 6), d=st.integers(1, 4))
def test_merging_halves_of_different_value_sizes_raises_value_error(impl, seed, L_q, d):
    """Halves whose lse agree but whose outputs differ in d_v cannot be merged either: ValueError naming them."""
    out1, out2 = normal(seed, (L_q, d)), normal(seed + 1, (L_q, d + 1))
    lse1, lse2 = normal(seed + 2, (L_q,)), normal(seed + 3, (L_q,))
    check.raises_value_error(impl, "merge_attention", (out1, lse1, out2, lse2), {},
                             names=[f"({L_q}, {d})", f"({L_q}, {d + 1})"],
                             what=f"merging outputs of shapes ({L_q}, {d}) and ({L_q}, {d + 1}) raises ValueError")


@claim("LSE-2")
@given(seed=SEEDS, L_q=st.integers(1, 6), d=st.integers(1, 4))
def test_merging_an_lse_that_does_not_fit_its_output_raises_value_error(impl, seed, L_q, d):
    """Halves alike in shape, but with an lse of L_q + 1 rows for outputs of L_q rows: ValueError naming the shapes."""
    out1, out2 = normal(seed, (L_q, d)), normal(seed + 1, (L_q, d))
    lse1, lse2 = normal(seed + 2, (L_q + 1,)), normal(seed + 3, (L_q + 1,))
    check.raises_value_error(impl, "merge_attention", (out1, lse1, out2, lse2), {},
                             names=[f"({L_q + 1},)"],
                             what=f"an lse of shape ({L_q + 1},) for outputs of shape ({L_q}, {d}) raises ValueError")
