"""Chapter: mask algebra (docs/mask_algebra.md). Claims MALG-1 .. MALG-3.

    window_size=(left, right) : query i sees key j iff -left <= j - (i + L_k - L_q) <= right   (bottom-right, like causal)
    q_segment_ids, kv_segment_ids : query i sees key j iff q_segment_ids[i] == kv_segment_ids[j]  (packed documents)
    composition               : visible = mask AND causal AND window AND documents
    prefix-LM                 : an OR (prefix both ways, the rest causal), passed as an explicit mask

The keywords are optional (CONTRACT.md, "Mask algebra"): an implementation without them has these
claims "not implemented". The relations each test states hold whatever the implementation:
a window as wide as the keys is no window; a packed row equals each of its documents run alone;
the keywords together equal the AND of their masks.
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import reference
from reference.mask_algebra import document_mask, prefix_lm_mask, segment_ids_from_lengths, window_mask
from spec_tests.harness import carried, check, tolerance
from spec_tests.harness.strategies import HEAD_DIMS, SEEDS, normal, random_mask
from spec_tests.harness.subject import not_applicable

claim = pytest.mark.claim
SDPA = "scaled_dot_product_attention"
SIZES = st.integers(1, 9)


def _extent(max_len):
    """One side of a window: no limit (None) or 0 .. max_len keys."""
    return st.one_of(st.none(), st.integers(0, max_len))


@st.composite
def windowed_cases(draw, max_len=9):
    """q (H, L_q, d_k), k (H, L_k, d_k), v (H, L_k, d_v) and window_size=(left, right); L_q != L_k allowed."""
    H, L_q, L_k = draw(st.integers(1, 2), label="H"), draw(SIZES, label="L_q"), draw(SIZES, label="L_k")
    d_k, d_v, seed = draw(HEAD_DIMS, label="d_k"), draw(HEAD_DIMS, label="d_v"), draw(SEEDS, label="seed")
    window = (draw(_extent(max_len), label="left"), draw(_extent(max_len), label="right"))
    q, k, v = normal(seed, (H, L_q, d_k)), normal(seed + 1, (H, L_k, d_k)), normal(seed + 2, (H, L_k, d_v))
    return q, k, v, window


@st.composite
def packed_rows(draw, max_docs=4, max_doc_len=4):
    """One row of packed documents: q, k, v (H, L, d) with L = sum(lengths), segment ids (L,), is_causal."""
    lengths = draw(st.lists(st.integers(1, max_doc_len), min_size=1, max_size=max_docs), label="lengths")
    H, d_k, d_v = draw(st.integers(1, 2), label="H"), draw(HEAD_DIMS, label="d_k"), draw(HEAD_DIMS, label="d_v")
    seed, causal = draw(SEEDS, label="seed"), draw(st.booleans(), label="is_causal")
    return packed_row(lengths, H, d_k, d_v, seed, causal)


def packed_row(lengths, H, d_k, d_v, seed, causal):
    """q, k, v (H, L, d) for documents of these lengths packed in one row, their segment ids (L,), is_causal."""
    L = sum(lengths)
    q, k, v = normal(seed, (H, L, d_k)), normal(seed + 1, (H, L, d_k)), normal(seed + 2, (H, L, d_v))
    return q, k, v, lengths, segment_ids_from_lengths(lengths), causal


# ---------------------------------------------------------------------------------- MALG-1
@claim("MALG-1")
@given(case=windowed_cases())
def test_window_matches_the_reference(impl, case):
    """window_size=(left, right) shows query i the keys -left <= j - (i + L_k - L_q) <= right, bottom-right aligned."""
    q, k, v, window = case
    check.oracle(impl, SDPA, q, k, v, window_size=window)


@claim("MALG-1")
@given(case=windowed_cases())
def test_weights_outside_the_window_are_exactly_zero_and_inside_positive(impl, case):
    """attention_weights puts exactly 0 outside the window and a positive weight on every key inside it."""
    q, k, _, window = case
    L_q, L_k = q.shape[-2], k.shape[-2]
    if carried.masking_charged(impl, "attention_weights"):  # exact zeros are its masking's (charged to the masks
        check.oracle(impl, "attention_weights", q, k, window_size=window)  # chapter): the keys the window picks are
        return  # judged by its own masking (carried.py, rule 4)
    p = impl.attention_weights(q, k, window_size=window)
    inside = np.broadcast_to(window_mask(L_q, L_k, window), p.shape)
    check.exactly(impl, np.where(inside, 0.0, p), np.zeros_like(p),
                  f"with window_size={window} (L_q={L_q}, L_k={L_k}) every weight outside the window is exactly 0")
    check.holds(impl, bool((p[inside] > 0).all()),
                f"with window_size={window} (L_q={L_q}, L_k={L_k}) every key inside the window gets a weight > 0",
                [f"window (True = inside, bottom-right aligned):\n{window_mask(L_q, L_k, window).astype(int)}",
                 f"weights seen (head 0):\n{np.round(p[0], 4)}",
                 "a key inside the window with weight 0 means the window is narrower than -left <= "
                 "j - (i + L_k - L_q) <= right, or centred on i instead of i + (L_k - L_q)"], [p])


@claim("MALG-1")
@given(case=windowed_cases())
def test_a_window_as_wide_as_the_keys_is_no_window(impl, case):
    """window_size=(W, W) with W = max(L_q, L_k), and (None, None), change nothing: no key is farther than W."""
    q, k, v, _ = case
    W = max(q.shape[-2], k.shape[-2])
    wides = [impl.scaled_dot_product_attention(q, k, v, window_size=window) for window in ((W, W), (None, None))]
    plain = impl.scaled_dot_product_attention(q, k, v)
    for window, wide in zip(((W, W), (None, None)), wides):
        check.close(impl, wide, plain, f"window_size={window} with L_q={q.shape[-2]}, L_k={k.shape[-2]} equals "
                    "no window", size=tolerance.attention_output_size(v))


# ---------------------------------------------------------------------------------- MALG-2
def _attention_then_relation(impl, *args, **keywords):
    """The attention call a relation below starts from, against the reference; when the implementation's attention
    already fails its own claims on the fixed inputs (its masks, its formula: charged to them), the call alone, and
    the relation that follows judges it (error carried forward, carried.failing_own_claims)."""
    if carried.failing_own_claims(impl, SDPA):
        return impl.scaled_dot_product_attention(*args, **keywords)
    return check.oracle(impl, SDPA, *args, **keywords)


@claim("MALG-2")
@given(row=packed_rows())
def test_packed_documents_equal_each_document_alone(impl, row):
    """A row of packed documents with segment ids equals running each document on its own (is_causal too)."""
    q, k, v, lengths, seg, causal = row
    if carried.masking_charged(impl):  # its masking fails the masks chapter (charged there): the keys the documents
        check.oracle(impl, SDPA, q, k, v, is_causal=causal, q_segment_ids=seg, kv_segment_ids=seg)  # pick are judged
        return  # by its own masking (carried.py, rule 4)
    out = _attention_then_relation(impl, q, k, v, is_causal=causal, q_segment_ids=seg, kv_segment_ids=seg)
    start = 0
    for n in lengths:
        end = start + n
        alone = impl.scaled_dot_product_attention(q[:, start:end], k[:, start:end], v[:, start:end], is_causal=causal)
        check.close(impl, out[:, start:end], alone,
                    f"documents of lengths {lengths} packed in one row (is_causal={causal}): positions {start}..{end - 1} "
                    "equal that document run alone", size=tolerance.attention_output_size(v))
        start = end


@claim("MALG-2")
@given(row=packed_rows())
def test_weights_across_documents_are_exactly_zero(impl, row):
    """No query puts any weight on another document's keys, not even the first key of the next one."""
    q, k, _, lengths, seg, causal = row
    if carried.masking_charged(impl, "attention_weights"):  # exact zeros are its masking's (charged to the masks
        check.oracle(impl, "attention_weights", q, k, is_causal=causal, q_segment_ids=seg, kv_segment_ids=seg)
        return  # chapter): the keys the documents pick are judged by its own masking (carried.py, rule 4)
    p = impl.attention_weights(q, k, is_causal=causal, q_segment_ids=seg, kv_segment_ids=seg)
    other = np.broadcast_to(~document_mask(seg, seg), p.shape)
    check.exactly(impl, np.where(other, p, 0.0), np.zeros_like(p),
                  f"documents of lengths {lengths} (is_causal={causal}): every weight on another document's key is 0")


@claim("MALG-2")
@given(row=packed_rows(), which=st.sampled_from(["q_segment_ids", "kv_segment_ids"]))
@example(row=packed_row([2, 3], 1, 2, 2, seed=0, causal=False), which="q_segment_ids")  # two documents
@example(row=packed_row([3, 1], 2, 2, 3, seed=1, causal=True), which="kv_segment_ids")
def test_one_segment_ids_argument_serves_queries_and_keys(impl, row, which):
    """Self-attention may pass its segment ids once, as q_segment_ids or as kv_segment_ids: the one given serves
    both, so the documents stay apart exactly as with both given."""
    q, k, v, lengths, seg, causal = row
    alone = impl.scaled_dot_product_attention(q, k, v, is_causal=causal, **{which: seg})
    both = _attention_then_relation(impl, q, k, v, is_causal=causal, q_segment_ids=seg, kv_segment_ids=seg)
    check.close(impl, alone, both, f"documents of lengths {lengths} (is_causal={causal}) with only {which} given "
                "equal both given the same ids", size=tolerance.attention_output_size(v))


@claim("MALG-2")
@given(seed=SEEDS, L_q=SIZES, L_k=SIZES, d=HEAD_DIMS, docs=st.integers(1, 3))
def test_cross_attention_segment_ids_match_the_reference(impl, seed, L_q, L_k, d, docs):
    """q_segment_ids (L_q,) and kv_segment_ids (L_k,) may differ in length and order: query i sees key j iff ids agree."""
    rng = np.random.default_rng(seed)
    q_seg, kv_seg = rng.integers(0, docs, L_q), rng.integers(0, docs, L_k)
    q, k, v = normal(seed, (2, L_q, d)), normal(seed + 1, (2, L_k, d)), normal(seed + 2, (2, L_k, d))
    check.oracle(impl, SDPA, q, k, v, q_segment_ids=q_seg, kv_segment_ids=kv_seg)


# ---------------------------------------------------------------------------------- MALG-3
@st.composite
def composed_cases(draw):
    """A mask (with padding-like holes), is_causal, a window and segment ids, all on one (H, L_q, L_k) problem."""
    H, L_q, L_k = draw(st.integers(1, 2), label="H"), draw(SIZES, label="L_q"), draw(SIZES, label="L_k")
    d, seed = draw(HEAD_DIMS, label="d"), draw(SEEDS, label="seed")
    causal = draw(st.booleans(), label="is_causal")
    window = (draw(_extent(4), label="left"), draw(_extent(4), label="right"))
    docs = draw(st.integers(1, 3), label="documents")
    rng = np.random.default_rng(seed)
    kv_seg = np.sort(rng.integers(0, docs, L_k))
    q_seg = kv_seg[L_k - L_q:] if L_q <= L_k else np.sort(rng.integers(0, docs, L_q))
    mask = random_mask(seed + 3, (H, L_q, L_k), 0.8)
    q, k, v = normal(seed, (H, L_q, d)), normal(seed + 1, (H, L_k, d)), normal(seed + 2, (H, L_k, d))
    return q, k, v, mask, causal, window, q_seg, kv_seg


@claim("MALG-3")
@given(case=composed_cases())
def test_mask_causal_window_and_documents_combine_by_and(impl, case):
    """mask=M, is_causal, window_size and segment ids together equal mask = M AND causal AND window AND documents:
    against the reference, and as a relation, the window's and the documents' masks ANDed into mask= with the same
    is_causal (a mask with is_causal alone is MASK-5's AND, judged there)."""
    q, k, v, mask, causal, window, q_seg, kv_seg = case
    L_q, L_k = q.shape[-2], k.shape[-2]
    keywords = dict(mask=mask, is_causal=causal, window_size=window, q_segment_ids=q_seg, kv_segment_ids=kv_seg)
    out = _attention_then_relation(impl, q, k, v, **keywords)
    both = mask & window_mask(L_q, L_k, window) & document_mask(q_seg, kv_seg)
    explicit = impl.scaled_dot_product_attention(q, k, v, mask=both, is_causal=causal)
    check.close(impl, out, explicit, f"mask, is_causal={causal}, window_size={window} and segment ids together "
                f"equal mask = mask AND window AND documents with is_causal={causal}",
                size=tolerance.attention_output_size(v))


@claim("MALG-3")
@given(seed=SEEDS, L=st.integers(2, 9), d=HEAD_DIMS, causal_window=st.integers(0, 9))
def test_a_causal_window_is_the_causal_mask_and_a_band(impl, seed, L, d, causal_window):
    """window_size=(w, 0) alone equals is_causal=True with window_size=(w, None): a window's right extent 0 is causal."""
    q, k, v = normal(seed, (2, L, d)), normal(seed + 1, (2, L, d)), normal(seed + 2, (2, L, d))
    w = causal_window
    a = impl.scaled_dot_product_attention(q, k, v, window_size=(w, 0))
    b = impl.scaled_dot_product_attention(q, k, v, is_causal=True, window_size=(w, None))
    check.close(impl, a, b, f"window_size=({w}, 0) equals is_causal=True with window_size=({w}, None)",
                size=tolerance.attention_output_size(v))
    wide = impl.scaled_dot_product_attention(q, k, v, is_causal=True, window_size=(w, w))
    check.close(impl, wide, a, f"under is_causal=True, window_size=({w}, {w}) equals ({w}, 0): the window never "
                "opens what causal hides", size=tolerance.attention_output_size(v))


@claim("MALG-3")
@given(seed=SEEDS, L=st.integers(2, 9), d=HEAD_DIMS, prefix=st.integers(1, 9))
def test_prefix_lm_is_bidirectional_on_the_prefix_and_causal_after(impl, seed, L, d, prefix):
    """mask=prefix_lm_mask(L, n): the first n outputs equal bidirectional attention over the prefix alone; the rest
    equal the reference (each later query sees the whole prefix and its own past)."""
    n = min(prefix, L)
    q, k, v = normal(seed, (2, L, d)), normal(seed + 1, (2, L, d)), normal(seed + 2, (2, L, d))
    masks_failed = [c for c in carried.failing_own_claims(impl, SDPA) if c.startswith("MASK-")]
    if masks_failed:  # the prefix-LM mask is an explicit mask=: with masks wrong, nothing here is the prefix's own
        not_applicable(f"error carried forward: your {SDPA} fails {', '.join(masks_failed)} on explicit masks, and "
                       "a prefix-LM mask is one (charged there)")
    out = _attention_then_relation(impl, q, k, v, mask=prefix_lm_mask(L, n))
    alone = impl.scaled_dot_product_attention(q[:, :n], k[:, :n], v[:, :n])
    check.close(impl, out[:, :n], alone, f"prefix-LM with a prefix of {n} of {L}: the prefix's outputs equal "
                "bidirectional attention over the prefix alone", size=tolerance.attention_output_size(v))


@claim("MALG-1")
@given(seed=SEEDS, L=SIZES, bad=st.sampled_from([(-1, 0), (0, -2), (3,), "wide", (1.5, 0)]))
def test_a_bad_window_size_raises_value_error(impl, seed, L, bad):
    """window_size must be a pair (left, right) of ints >= 0 or None: anything else is a ValueError naming it."""
    q, k, v = normal(seed, (L, 2)), normal(seed + 1, (L, 2)), normal(seed + 2, (L, 2))
    names = [str(x) for x in bad if isinstance(x, (int, float)) and x != 0] if isinstance(bad, tuple) else []
    check.raises_value_error(impl, SDPA, (q, k, v), dict(window_size=bad), names=names,
                             what=f"window_size={bad!r} raises ValueError" + (f" naming {names}" if names else ""))


@claim("MALG-2")
@given(seed=SEEDS, L=st.integers(2, 9), extra=st.integers(1, 3))
def test_segment_ids_of_the_wrong_length_raise_value_error(impl, seed, L, extra):
    """q_segment_ids must give one id per query: a length other than L_q is a ValueError naming its shape."""
    q, k, v = normal(seed, (L, 2)), normal(seed + 1, (L, 2)), normal(seed + 2, (L, 2))
    ids = np.zeros(L + extra, dtype=np.int64)
    check.raises_value_error(impl, SDPA, (q, k, v), dict(q_segment_ids=ids, kv_segment_ids=np.zeros(L, dtype=np.int64)),
                             names=[f"({L + extra},)"],
                             what=f"q_segment_ids of shape ({L + extra},) for L_q = {L} raise ValueError naming the shape")
