"""Chapter: masks (docs/masks.md). Claims MASK-1 .. MASK-9.

    mask[..., i, j] = True  means query i may attend to key j          (CONTRACT.md; PyTorch's bool attn_mask too)
    is_causal       : query i sees key j iff j <= i + (L_k - L_q)        (bottom-right aligned)
    mask AND causal : both must allow a key
    no visible key  : the output row and its weights are exactly 0       (ONNX Attention-23, PyTorch, FlashAttention)

Lecture note 2 §3.2 builds the padding mask `(x != pad_idx).unsqueeze(1).unsqueeze(2)`, shape (B, 1, 1, L),
and fills hidden scores with -1e9; lecture note 1 fills them with -inf. Neither survives a fully masked row.
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import reference
from spec_tests.harness import carried, check, tolerance
from spec_tests.harness.feedback import SpecFailure
from spec_tests.harness.strategies import HEAD_DIMS, SEEDS, attention_cases, normal, random_mask
from spec_tests.harness.subject import not_applicable

claim = pytest.mark.claim
SDPA = "scaled_dot_product_attention"
SIZES = st.integers(1, 9)


@st.composite
def padded_batches(draw, max_len=9, square=False):
    """(B, H, L_q, d) queries against (B, H, L, d) keys/values where batch b has lengths[b] real keys (L_q = L if
    square)."""
    B, H = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    L = draw(st.integers(2, max_len))
    L_q = L if square else draw(SIZES)
    lengths = draw(st.lists(st.integers(1, L), min_size=B, max_size=B))
    d_k, d_v, seed = draw(HEAD_DIMS), draw(HEAD_DIMS), draw(SEEDS)
    q = normal(seed, (B, H, L_q, d_k))
    k, v = normal(seed + 1, (B, H, L, d_k)), normal(seed + 2, (B, H, L, d_v))
    return q, k, v, np.array(lengths), reference.padding_mask(lengths, L)


# ---------------------------------------------------------------------------------- MASK-1
@claim("MASK-1")
@given(batch=padded_batches())
def test_padding_mask_equals_the_unpadded_sequence(impl, batch):
    """With a (B, 1, 1, L) padding mask, batch b's outputs equal attention over its real keys alone."""
    q, k, v, lengths, pad = batch
    out = check.oracle(impl, SDPA, q, k, v, mask=pad)
    for b, n in enumerate(lengths):
        alone = impl.scaled_dot_product_attention(q[b], k[b, :, :n], v[b, :, :n])
        check.close(impl, out[b], alone, f"batch {b} with {n} real keys equals its unpadded keys alone",
                    size=tolerance.attention_output_size(v))


@claim("MASK-1")
@given(batch=padded_batches())
def test_pad_contents_do_not_matter(impl, batch):
    """Replacing what sits at pad positions (even by huge values) changes no output."""
    q, k, v, lengths, pad = batch
    hidden = ~np.broadcast_to(pad[:, :, 0, :, None], k.shape[:-1] + (1,))  # (B, 1, L, 1) -> (B, H, L, 1)
    k2 = np.where(hidden, 50 * normal(7, k.shape), k)
    v2 = np.where(hidden, 1e4 * normal(8, v.shape), v)
    out = impl.scaled_dot_product_attention(q, k, v, mask=pad)
    out2 = impl.scaled_dot_product_attention(q, k2, v2, mask=pad)
    check.close(impl, out2, out, "changing the keys and values at pad positions changes no output",
                size=tolerance.attention_output_size(v))


@claim("MASK-1")
@given(batch=padded_batches())
def test_weight_on_a_pad_key_is_exactly_zero(impl, batch):
    """attention_weights puts exactly 0 on every pad key."""
    q, k, v, lengths, pad = batch
    p = impl.attention_weights(q, k, mask=pad)
    on_pads = np.where(np.broadcast_to(~pad, p.shape), p, 0.0)
    check.exactly(impl, on_pads, np.zeros_like(p), "the weight on every pad key is exactly 0")


@claim("MASK-1")
@given(batch=padded_batches())
def test_pad_keys_contribute_exactly_nothing_to_sdpa(impl, batch):
    """With V = I (one-hot values) the output is P: its columns at pad keys are exactly 0."""
    q, k, _, lengths, pad = batch
    L = k.shape[-2]
    p = impl.scaled_dot_product_attention(q, k, np.broadcast_to(np.eye(L), k.shape[:-1] + (L,)).copy(), mask=pad)
    on_pads = np.where(np.broadcast_to(~pad, p.shape), p, 0.0)
    check.exactly(impl, on_pads, np.zeros_like(p), "with V = I, the output's columns at pad keys are exactly 0")


# ---------------------------------------------------------------------------------- MASK-2
@claim("MASK-2")
@given(seed=SEEDS, L=st.integers(2, 9), d=HEAD_DIMS, t=st.integers(0, 7), data=st.data())
def test_future_tokens_do_not_leak(impl, seed, L, d, t, data):
    """Under is_causal, outputs at positions <= t do not change when anything after t changes."""
    t = min(t, L - 2)
    q, k, v = normal(seed, (2, L, d)), normal(seed + 1, (2, L, d)), normal(seed + 2, (2, L, d))
    q2, k2, v2 = q.copy(), k.copy(), v.copy()
    q2[:, t + 1:] = 30 * normal(seed + 3, q2[:, t + 1:].shape)
    k2[:, t + 1:] = 30 * normal(seed + 4, k2[:, t + 1:].shape)
    v2[:, t + 1:] = 1e3 * normal(seed + 5, v2[:, t + 1:].shape)
    out = impl.scaled_dot_product_attention(q, k, v, is_causal=True)
    out2 = impl.scaled_dot_product_attention(q2, k2, v2, is_causal=True)
    check.close(impl, out2[:, : t + 1], out[:, : t + 1],
                f"changing tokens after position {t} leaves outputs 0..{t} unchanged", size=tolerance.attention_output_size(v))


@claim("MASK-2")
@given(seed=SEEDS, L=st.integers(1, 9), d=HEAD_DIMS)
def test_weights_above_the_diagonal_are_exactly_zero(impl, seed, L, d):
    """attention_weights(..., is_causal=True)[i, j] == 0 exactly for j > i; the diagonal is visible."""
    q, k = normal(seed, (2, L, d)), normal(seed + 1, (2, L, d))
    p = impl.attention_weights(q, k, is_causal=True)
    above = np.triu(np.ones((L, L), dtype=bool), k=1)
    check.exactly(impl, np.where(above, p, 0.0), np.zeros_like(p), "causal weights above the diagonal are exactly 0")
    check.holds(impl, bool((p[..., np.arange(L), np.arange(L)] > 0).all()),
                "each query sees itself: causal weights on the diagonal are > 0",
                [f"diagonal weights seen: {p[..., np.arange(L), np.arange(L)]}"], [p])


@claim("MASK-2")
@given(case=attention_cases(masked=False, causal=True, lengths=SIZES))
def test_is_causal_equals_the_lower_triangular_mask(impl, case):
    """is_causal=True gives the same result as mask=causal_mask(L, L), on square inputs (L_q != L_k is MASK-3's
    alignment)."""
    tri = reference.causal_mask(case.L_q, case.L_k)
    a = check.oracle(impl, SDPA, case.q, case.k, case.v, is_causal=True)
    b = impl.scaled_dot_product_attention(case.q, case.k, case.v, mask=tri)
    check.close(impl, a, b, "is_causal=True equals the explicit mask causal_mask(L_q, L_k)",
                size=tolerance.attention_output_size(case.v))


@claim("MASK-2")
@given(seed=SEEDS, L=st.integers(2, 7), d=st.integers(1, 4), t=st.integers(0, 5))
def test_causal_output_has_no_gradient_from_future_tokens(impl, seed, L, d, t):
    """d out[t] / d (q, k, v)[j] == 0 exactly for every j > t (autograd backends)."""
    if impl.backend != "torch":
        pytest.skip("not applicable: gradients are checked where the backend has autograd (torch)")
    import torch

    t = min(t, L - 2)
    q, k, v = (impl.native(normal(seed + i, (L, d))).requires_grad_(True) for i in range(3))
    out = impl.call_native(SDPA, q, k, v, is_causal=True)
    if not out.requires_grad:
        pytest.skip("not applicable: this implementation's output is not differentiable by autograd")
    out[t].sum().backward()
    for name, x in (("q", q), ("k", k), ("v", v)):
        g = impl.to_numpy(x.grad) if x.grad is not None else np.zeros((L, d))
        check.exactly(impl, g[t + 1:], np.zeros_like(g[t + 1:]),
                      f"the gradient of out[{t}] with respect to {name}[{t + 1}:] is exactly 0")


# ---------------------------------------------------------------------------------- MASK-3
@claim("MASK-3")
@given(case=attention_cases(masked=False, causal=True, alignment=True).filter(lambda c: c.L_q <= c.L_k))
def test_causal_is_bottom_right_aligned(impl, case):
    """With L_q != L_k, query i sees keys j <= i + (L_k - L_q): the queries are the last L_q positions.
    (L_q > L_k leaves the first queries with no key: MASK-4's subject, in its own test.)"""
    check.oracle(impl, SDPA, case.q, case.k, case.v, is_causal=True)


@claim("MASK-3")
@given(seed=SEEDS, L=st.integers(1, 9), d=HEAD_DIMS, prefill=st.integers(1, 9))
def test_decoding_with_a_kv_cache_reproduces_causal_attention(impl, seed, L, d, prefill):
    """A prefill of the first queries, then one query at a time against the growing cache, equals full causal attention."""
    prefill = min(prefill, L)
    q, k, v = normal(seed, (2, L, d)), normal(seed + 1, (2, L, d)), normal(seed + 2, (2, L, d))
    full = impl.scaled_dot_product_attention(q, k, v, is_causal=True)
    steps = [impl.scaled_dot_product_attention(q[:, :prefill], k[:, :prefill], v[:, :prefill], is_causal=True)]
    for t in range(prefill, L):  # query t against keys 0..t: the cache holds t + 1 entries
        steps.append(impl.scaled_dot_product_attention(q[:, t:t + 1], k[:, : t + 1], v[:, : t + 1], is_causal=True))
    check.close(impl, np.concatenate(steps, axis=1), full,
                f"prefill of {prefill} then one query at a time against a growing K/V cache equals full causal attention",
                size=tolerance.attention_output_size(v))


@st.composite
def decoding_cases(draw):
    """Self-attention inputs x (B, L, D), weights with G K/V heads (G divides H), and a prefill length."""
    from spec_tests.harness.strategies import mha_weights

    B, L = draw(st.integers(1, 2), label="B"), draw(st.integers(1, 8), label="L")
    H, d_k = draw(st.integers(1, 4), label="num_heads"), draw(st.sampled_from([1, 2, 4]), label="d_k")
    G = draw(st.sampled_from([g for g in range(1, H + 1) if H % g == 0]), label="num_kv_heads")
    seed, prefill = draw(SEEDS, label="seed"), draw(st.integers(1, 8), label="prefill")
    D = H * d_k
    return normal(seed, (B, L, D)), mha_weights(seed + 1, D, draw(st.booleans(), label="bias"), kv_dim=G * d_k), \
        H, G, min(prefill, L)


def _decode_with(impl, x, w, H, prefill, **gqa):
    """Prefill, then one new token at a time: the new queries against every token so far, is_causal=True."""
    steps = [impl.multi_head_attention(x[:, :prefill], x[:, :prefill], x[:, :prefill], w, H, is_causal=True, **gqa)]
    for t in range(prefill, x.shape[1]):  # query t against tokens 0..t: what a K/V cache holds at step t
        steps.append(impl.multi_head_attention(x[:, t:t + 1], x[:, : t + 1], x[:, : t + 1], w, H, is_causal=True,
                                               **gqa))
    return np.concatenate(steps, axis=1)  # (B, L, D)


@claim("MASK-3")
@given(case=decoding_cases().filter(lambda c: c[3] == c[2]))
def test_multi_head_decoding_reproduces_causal_self_attention(impl, case):
    """Multi-head attention decoded token by token (each new query against all tokens so far, bottom-right
    causal) equals causal self-attention over the whole sequence."""
    x, w, H, _, prefill = case
    full = check.oracle(impl, "multi_head_attention", x, x, x, w, H, is_causal=True)
    check.close(impl, _decode_with(impl, x, w, H, prefill), full,
                f"prefill of {prefill}, then one token at a time, equals full causal multi-head attention",
                size=tolerance.multi_head_size(x, x, x, w, H))


@claim("MASK-3")
@given(case=decoding_cases())
def test_grouped_query_decoding_reproduces_causal_self_attention(impl, case):
    """The same with grouped-query attention (num_kv_heads = G): a cache of G K/V heads suffices."""
    x, w, H, G, prefill = case
    full = check.oracle(impl, "multi_head_attention", x, x, x, w, H, is_causal=True, num_kv_heads=G)
    check.close(impl, _decode_with(impl, x, w, H, prefill, num_kv_heads=G), full,
                f"GQA (H={H}, G={G}): prefill of {prefill}, then one token at a time, equals full causal attention",
                size=tolerance.multi_head_size(x, x, x, w, H))


@claim("MASK-3")
@given(case=decoding_cases())
def test_the_oracles_kv_cache_reproduces_causal_self_attention(case):
    """reference.kv_cache: projecting each token once and attending against the cached K/V (G heads) equals
    the reference's full causal (grouped-query) attention; the cache ends with one entry per token."""
    x, w, H, G, prefill = case
    decoded, cache = reference.decode(x, w, H, num_kv_heads=G, prefill=prefill)
    full = reference.multi_head_attention(x, x, x, w, H, is_causal=True, num_kv_heads=G)
    np.testing.assert_allclose(decoded, full, rtol=0, atol=1e-12 * (np.abs(full).max() + 1.0))
    assert len(cache) == x.shape[1] and cache.keys.shape[1] == G


# ---------------------------------------------------------------------------------- MASK-4
@claim("MASK-4")
@given(seed=SEEDS, L_q=st.integers(1, 7), L_k=st.integers(1, 7), d=HEAD_DIMS, dead=st.integers(1, 3))
def test_fully_masked_rows_output_exactly_zero(impl, seed, L_q, L_k, d, dead):
    """A query row that sees no key outputs exactly 0 (not NaN, not the mean of V); other rows are right."""
    mask = random_mask(seed, (2, L_q, L_k), 0.7, dead_rows=dead)
    v = normal(seed + 2, (2, L_k, d)) + 3.0  # mean of V far from 0, so "the mean of V" cannot pass as 0
    q, k = normal(seed, (2, L_q, d)), normal(seed + 1, (2, L_k, d))
    out = impl.scaled_dot_product_attention(q, k, v, mask=mask)
    dead_rows = ~mask.any(axis=-1)  # (2, L_q)
    seen = out[dead_rows]
    details = []
    if np.isnan(seen).any():
        details.append("seen NaN: the -inf fill with no guard gives 0/0 for a row that sees nothing")
    elif seen.size and np.allclose(seen, np.broadcast_to(v.mean(axis=-2, keepdims=True), out.shape)[dead_rows]):
        details.append("seen the mean of V: a finite fill such as -1e9 makes a dead row attend uniformly")
    check.holds(impl, not details, "rows with no visible key output exactly 0", details, [out])
    check.exactly(impl, seen, np.zeros_like(seen), "rows with no visible key output exactly 0")
    check.oracle(impl, SDPA, q, k, v, mask=mask)


@claim("MASK-4")
@given(seed=SEEDS, L_q=st.integers(1, 7), L_k=st.integers(1, 7), d=HEAD_DIMS, dead=st.integers(1, 3))
def test_fully_masked_rows_have_zero_weights(impl, seed, L_q, L_k, d, dead):
    mask = random_mask(seed, (2, L_q, L_k), 0.7, dead_rows=dead)
    p = impl.attention_weights(normal(seed, (2, L_q, d)), normal(seed + 1, (2, L_k, d)), mask=mask)
    dead_rows = ~mask.any(axis=-1)
    check.exactly(impl, p[dead_rows], np.zeros_like(p[dead_rows]), "rows with no visible key have all weights 0")


@claim("MASK-4")
@given(case=attention_cases(masked=True, causal=False, dead_rows=True, bias=True))
def test_fully_masked_rows_stay_zero_with_a_bias(impl, case):
    """With an additive bias= as well (a later chapter's keyword), a query whose keys the mask all hides still
    outputs exactly 0: the bias does not bring its keys back (a mask folded into the bias as a finite minimum
    gives that row the mean of v). Without bias= (optional) there is nothing to judge: not applicable."""
    if not impl.has("scaled_dot_product_attention", "bias"):
        not_applicable(f"{impl.name}'s scaled_dot_product_attention takes no bias= (the positional chapter's "
                       "optional keyword): a dead row with a bias cannot be asked of it")
    out = impl.scaled_dot_product_attention(case.q, case.k, case.v, **case.kwargs)
    live = np.broadcast_to(case.mask, case.scores_shape).any(axis=-1)  # (..., L_q): rows that see a key
    check.exactly(impl, out[~live], np.zeros_like(out[~live]),
                  "with a bias too, rows with no visible key output exactly 0")
    # the rows that see a key are the bias's own claim (PE-5: a bias combines with the mask): not judged here


@claim("MASK-4")
@given(seed=SEEDS, L_q=st.integers(1, 7), L_k=st.integers(2, 7), d=HEAD_DIMS, dead=st.integers(1, 3))
def test_rows_a_bias_hides_output_exactly_zero(impl, seed, L_q, L_k, d, dead):
    """A bias of -inf hides its key like mask=False (the positional chapter's bias=), so a query whose every key
    has bias -inf sees no key: it outputs exactly 0, not NaN (a softmax of -inf everywhere) and not the mean of V.

    Judged when the implementation's bias is right where it is finite (the same call with the -inf entries made
    finite): a bias that is wrong there (ignored, say) is PE-5's, and its dead rows follow from it. Without bias=
    it is not applicable."""
    if not impl.has("scaled_dot_product_attention", "bias"):
        not_applicable(f"{impl.name}'s scaled_dot_product_attention takes no bias= (the positional chapter's "
                       "optional keyword): a row hidden by a bias cannot be asked of it")
    rng = np.random.default_rng(seed + 4)
    q, k, v = normal(seed, (2, 3, L_q, d)), normal(seed + 1, (2, 3, L_k, d)), normal(seed + 2, (2, 3, L_k, d)) + 3.0
    dead_rows = np.isin(np.arange(L_q), rng.choice(L_q, size=min(dead, L_q), replace=False))  # (L_q,)
    hide = (rng.random((L_q, L_k)) < 0.3) | dead_rows[:, None]  # (L_q, L_k)
    hide[~dead_rows, rng.integers(0, L_k)] = False  # the other rows keep a key
    finite = normal(seed + 3, (L_q, L_k))  # (L_q, L_k), broadcast over (B, H)
    try:
        check.oracle(impl, SDPA, q, k, v, bias=finite)
    except SpecFailure:  # its dead rows follow from its bias, whose error is charged to PE-5
        carried.note_carried("your bias=, which already differs from the reference's where it is finite (PE-5 "
                             "judges that)")
        return
    bias = np.where(hide, -np.inf, finite)
    out = impl.scaled_dot_product_attention(q, k, v, bias=bias)
    check.exactly(impl, out[..., dead_rows, :], np.zeros_like(out[..., dead_rows, :]),
                  "rows whose every key has bias -inf output exactly 0")
    check.oracle(impl, SDPA, q, k, v, bias=bias)


@claim("MASK-4")
@given(seed=SEEDS, L_k=st.integers(1, 5), extra=st.integers(1, 4), d=HEAD_DIMS)
def test_causal_with_more_queries_than_keys_gives_zero_rows(impl, seed, L_k, extra, d):
    """is_causal with L_q > L_k: the first L_q - L_k queries see no key and output exactly 0.

    Those rows are dead because of the bottom-right alignment (MASK-3's subject). An implementation whose
    is_causal differs from the explicit bottom-right mask (aligned top-left, say) is judged here on that mask's
    dead rows: its alignment is charged to MASK-3, once."""
    L_q = L_k + extra
    q, k, v = normal(seed, (L_q, d)), normal(seed + 1, (L_k, d)), normal(seed + 2, (L_k, d)) + 3.0
    explicit = impl.scaled_dot_product_attention(q, k, v, mask=reference.causal_mask(L_q, L_k))  # bottom-right
    try:
        check.close(impl, impl.scaled_dot_product_attention(q, k, v, is_causal=True), explicit,
                    "is_causal=True equals the explicit bottom-right mask", size=tolerance.attention_output_size(v))
    except SpecFailure:  # its is_causal is aligned otherwise (MASK-3's): the dead rows of the explicit mask, here
        check.exactly(impl, explicit[:extra], np.zeros((extra, d)), f"with the explicit mask causal_mask({L_q}, "
                      f"{L_k}), the first {extra} queries see no key and output exactly 0")
        carried.note_carried("the explicit bottom-right mask, as your is_causal is aligned otherwise (MASK-3 "
                             "judges that)")
        return
    out = check.oracle(impl, SDPA, q, k, v, is_causal=True)
    check.exactly(impl, out[:extra], np.zeros((extra, d)), f"the first {extra} queries see no key and output exactly 0")


@claim("MASK-4")
@given(seed=SEEDS, L_q=st.integers(1, 5), L_k=st.integers(1, 5), d=HEAD_DIMS)
def test_an_all_false_mask_gives_all_zeros(impl, seed, L_q, L_k, d):
    mask = np.zeros((L_q, L_k), dtype=bool)
    out = impl.scaled_dot_product_attention(normal(seed, (L_q, d)), normal(seed + 1, (L_k, d)),
                                            normal(seed + 2, (L_k, d)) + 3.0, mask=mask)
    check.exactly(impl, out, np.zeros((L_q, d)), "a mask that hides everything gives an all-zero output")


# ---------------------------------------------------------------------------------- MASK-5
@claim("MASK-5")
@given(case=attention_cases(masked=True))
def test_masked_sdpa_matches_oracle(impl, case):
    """Any mask broadcastable to (..., L_q, L_k), with or without is_causal, equals the reference."""
    check.oracle(impl, SDPA, case.q, case.k, case.v, **case.kwargs)


MASK_SHAPES = ["(L_k,)", "(L_q, L_k)", "(B, 1, 1, L_k)", "(B, 1, L_q, L_k)", "(B, H, L_q, L_k)"]


def _masks_of_every_shape(seed, B, H, L_q, L_k):
    """One visibility pattern written in each of the five shapes (coarser shapes repeat a pattern)."""
    rng = np.random.default_rng(seed)
    keys = rng.random(L_k) < 0.7  # (L_k,)
    pair = rng.random((L_q, L_k)) < 0.7
    pad = rng.random((B, 1, 1, L_k)) < 0.7
    per_batch = rng.random((B, 1, L_q, L_k)) < 0.7
    full = rng.random((B, H, L_q, L_k)) < 0.7
    masks = [keys, pair, pad, per_batch, full]
    for m in masks:  # every query keeps key 0: rows that see nothing are MASK-4's subject, not this claim's
        m[..., 0] = True
    return dict(zip(MASK_SHAPES, masks))


@claim("MASK-5")
@given(seed=SEEDS, B=st.integers(1, 3), H=st.integers(1, 3), L_q=SIZES, L_k=SIZES, d=HEAD_DIMS,
       which=st.sampled_from(MASK_SHAPES))
def test_mask_shapes_broadcast_and_agree(impl, seed, B, H, L_q, L_k, d, which):
    """A mask of each shape gives the same result as its broadcast to (B, H, L_q, L_k)."""
    mask = _masks_of_every_shape(seed, B, H, L_q, L_k)[which]
    q, k, v = normal(seed, (B, H, L_q, d)), normal(seed + 1, (B, H, L_k, d)), normal(seed + 2, (B, H, L_k, d))
    out = check.oracle(impl, SDPA, q, k, v, mask=mask)
    full = np.broadcast_to(mask, (B, H, L_q, L_k)).copy()
    check.close(impl, out, impl.scaled_dot_product_attention(q, k, v, mask=full),
                f"a mask of shape {which} = {mask.shape} equals its broadcast to (B, H, L_q, L_k)",
                size=tolerance.attention_output_size(v))


@claim("MASK-5")
@given(seed=SEEDS, B=st.integers(1, 3), H=st.integers(1, 2), d_k=st.integers(1, 3), L_q=SIZES, L_k=SIZES,
       which=st.sampled_from(MASK_SHAPES))
@example(seed=1, B=2, H=2, d_k=2, L_q=3, L_k=4, which="(B, 1, 1, L_k)")  # padding that differs per sequence, 2 heads
def test_multi_head_masks_broadcast_over_batch_and_heads(impl, seed, B, H, d_k, L_q, L_k, which):
    """multi_head_attention takes masks broadcastable to (B, H, L_q, L_k), the padding mask (B, 1, 1, L_k) among them."""
    from spec_tests.harness.strategies import mha_weights

    D = H * d_k
    mask = _masks_of_every_shape(seed, B, H, L_q, L_k)[which]
    x, kv = normal(seed, (B, L_q, D)), normal(seed + 1, (B, L_k, D))
    check.oracle(impl, "multi_head_attention", x, kv, kv, mha_weights(seed, D, True), H, mask=mask)


@claim("MASK-5")
@given(seed=SEEDS, B=st.integers(1, 2), HG=st.sampled_from([(4, 2), (4, 1), (6, 3), (6, 2), (2, 1)]),
       d_k=st.integers(1, 3), L_q=SIZES, L_k=SIZES, which=st.sampled_from(MASK_SHAPES))
@example(seed=3, B=1, HG=(4, 2), d_k=2, L_q=3, L_k=5, which="(B, H, L_q, L_k)")  # GQA, one mask per query head
@example(seed=4, B=2, HG=(4, 1), d_k=1, L_q=4, L_k=4, which="(B, H, L_q, L_k)")  # MQA
def test_grouped_query_masks_follow_the_query_heads(impl, seed, B, HG, d_k, L_q, L_k, which):
    """With num_kv_heads = G < H (GQA; MQA at G = 1), a mask's head axis is the H query heads': query head h
    uses mask[:, h] and K/V head h // (H/G), whatever way the implementation groups the heads."""
    from spec_tests.harness.strategies import mha_weights

    H, G = HG
    D = H * d_k
    mask = _masks_of_every_shape(seed, B, H, L_q, L_k)[which]
    x, kv = normal(seed, (B, L_q, D)), normal(seed + 1, (B, L_k, D))
    check.oracle(impl, "multi_head_attention", x, kv, kv, mha_weights(seed, D, True, kv_dim=G * d_k), H, mask=mask,
                 num_kv_heads=G)


@claim("MASK-5")
@given(batch=padded_batches(square=True))
def test_padding_and_causal_combine_by_and(impl, batch):
    """mask=padding, is_causal=True equals mask = padding AND causal_mask. (Square, so every query keeps key 0:
    rows that see nothing are MASK-4's subject, and L_q != L_k is MASK-3's alignment.)"""
    q, k, v, _, pad = batch
    L_q, L_k = q.shape[-2], k.shape[-2]
    both = pad & reference.causal_mask(L_q, L_k)
    a = check.oracle(impl, SDPA, q, k, v, mask=pad, is_causal=True)
    check.close(impl, a, impl.scaled_dot_product_attention(q, k, v, mask=both),
                "padding mask with is_causal=True equals the AND of the two masks", size=tolerance.attention_output_size(v))


# ---------------------------------------------------------------------------------- MASK-6
@claim("MASK-6")
@given(case=attention_cases(masked=True, lengths=SIZES, dead_rows=True))
def test_masked_attention_in_low_precision_is_finite_and_correct(impl, case):
    """In float16/bfloat16, where an additive -1e9 overflows to -inf, masked attention stays finite and right."""
    if impl.dtype not in ("float16", "bfloat16"):
        pytest.skip("not applicable: MASK-6 is about float16 and bfloat16, and this run is " + impl.dtype)
    out = check.oracle(impl, SDPA, case.q, case.k, case.v, **case.kwargs)
    check.holds(impl, bool(np.isfinite(out).all()), "masked low-precision attention is finite", arrays=[out])


# ---------------------------------------------------------------------------------- MASK-7
@claim("MASK-7")
@given(case=attention_cases(masked=None, causal=False, lengths=SIZES), extra=st.integers(1, 5))
def test_appending_masked_keys_changes_nothing(impl, case, extra):
    """Keys appended with mask False (here with large scores and huge values) change no output."""
    batch = case.batch
    k_extra = 30 * normal(case.seed + 5, (*batch, extra, case.d_k))
    v_extra = 1e4 * normal(case.seed + 6, (*batch, extra, case.d_v))
    mask = np.ones(case.scores_shape, dtype=bool) if case.mask is None else np.broadcast_to(case.mask, case.scores_shape)
    longer = np.concatenate([mask, np.zeros((*case.scores_shape[:-1], extra), dtype=bool)], axis=-1)
    out = impl.scaled_dot_product_attention(case.q, case.k, case.v, mask=mask.copy())
    out2 = impl.scaled_dot_product_attention(case.q, np.concatenate([case.k, k_extra], axis=-2),
                                             np.concatenate([case.v, v_extra], axis=-2), mask=longer)
    check.close(impl, out2, out, f"appending {extra} masked-out keys changes no output", size=tolerance.attention_output_size(case.v))


# ---------------------------------------------------------------------------------- MASK-8, MASK-9: poison
# What sits at a hidden position is never read (CONTRACT.md, "Poison at hidden positions"):
#   (a) K or V of a key that no query of its (batch, head) slice sees      -> reaches no output
#   (b) K of a key hidden from row i (seen by other rows)                  -> does not reach row i
#   (c) large finite values there (K of 1e4, ONNX's V = 1000)              -> change no visible output
# NaN in V of a key that some query sees may reach every row of its slice: P V multiplies it by the
# other rows' weights of exactly 0, and 0 · NaN = NaN. The contract promises nothing there.
POISONS = st.sampled_from([np.nan, np.inf, -np.inf])


@st.composite
def poisoned_cases(draw):
    """q (B, H, L_q, d), k (B, H, L_k, d), v (B, H, L_k, d_v); a per-row mask with 1 .. L_k - 1 key columns hidden
    from every query of each slice (padding), optionally ANDed with causal; some rows may see nothing."""
    B, H = draw(st.integers(1, 2), label="B"), draw(st.integers(1, 2), label="H")
    L_q, L_k = draw(SIZES, label="L_q"), draw(st.integers(2, 9), label="L_k")
    d, d_v, seed = draw(HEAD_DIMS, label="d"), draw(HEAD_DIMS, label="d_v"), draw(SEEDS, label="seed")
    rng = np.random.default_rng(seed)
    mask = rng.random((B, H, L_q, L_k)) < 0.7
    hidden = rng.random((B, H, 1, L_k)) < 0.4
    hidden[..., rng.integers(L_k)] = True  # at least one column no query sees, and one some query may see
    hidden[..., (np.argmax(hidden[0, 0, 0]) + 1) % L_k] = False
    mask &= ~hidden
    causal = draw(st.booleans(), label="is_causal") and L_q <= L_k
    q, k, v = normal(seed, (B, H, L_q, d)), normal(seed + 1, (B, H, L_k, d)), normal(seed + 2, (B, H, L_k, d_v))
    return q, k, v, dict(mask=mask, is_causal=causal)


def _visible_cells(kw, L_q, L_k):
    """(B, H, L_q, L_k): mask AND causal, as the contract reads them."""
    visible = kw["mask"]
    if kw["is_causal"]:
        visible = visible & (np.arange(L_k) <= np.arange(L_q)[:, None] + (L_k - L_q))
    return visible


def _poisoned(x, where_keys, value):
    """x (B, H, L_k, d) with every entry of the keys where_keys (B, H, L_k) replaced by value."""
    return np.where(where_keys[..., None], value, x)


@claim("MASK-8")
@given(case=poisoned_cases(), poison=POISONS)
def test_poison_in_keys_no_query_sees_reaches_no_output(impl, case, poison):
    """NaN or ±inf in K and V of the keys that no query of their slice sees (padding, a hidden column) changes no
    output: the outputs equal those with ordinary values there, and stay finite."""
    q, k, v, kw = case
    unseen = ~_visible_cells(kw, q.shape[-2], k.shape[-2]).any(axis=-2)  # (B, H, L_k)
    clean = impl.scaled_dot_product_attention(q, k, v, **kw)
    seen = impl.scaled_dot_product_attention(q, _poisoned(k, unseen, poison), _poisoned(v, unseen, poison), **kw)
    check.close(impl, seen, clean, f"{poison} in K and V of the keys no query sees changes no output "
                "(a weight of 0 times NaN is NaN: such keys must be removed, not multiplied by 0)",
                size=tolerance.attention_output_size(v))


@claim("MASK-8")
@given(case=poisoned_cases(), poison=POISONS)
def test_poison_in_a_hidden_key_does_not_reach_the_rows_it_is_hidden_from(impl, case, poison):
    """NaN or ±inf in K of a key that some rows see and others do not: the rows it is hidden from keep their
    outputs (the rows that see it may turn NaN). Holds for per-row masks and causal alike."""
    q, k, v, kw = case
    visible = _visible_cells(kw, q.shape[-2], k.shape[-2])  # (B, H, L_q, L_k)
    partly = visible.any(axis=-2) & ~visible.all(axis=-2)  # (B, H, L_k): keys some rows see, some do not
    rows = ~(visible & partly[..., None, :]).any(axis=-1)  # (B, H, L_q): rows that see none of them
    clean = impl.scaled_dot_product_attention(q, k, v, **kw)
    seen = impl.scaled_dot_product_attention(q, _poisoned(k, partly, poison), v, **kw)
    check.close(impl, seen[rows], clean[rows], f"{poison} in K of a key hidden from a row changes nothing in that "
                "row (its score must be removed, not added to: NaN + (-inf) is NaN)",
                size=tolerance.attention_output_size(v))


@claim("MASK-8")
@given(seed=SEEDS, L_q=SIZES, L_k=SIZES, d=HEAD_DIMS)
def test_an_all_true_mask_puts_no_nan_in_allowed_cells(impl, seed, L_q, L_k, d):
    """A mask of all True is no mask: converting it to an additive one as (1 - m) · (-inf) makes 0 · (-inf) = NaN
    in every allowed cell (ONNX's tests pin this bug); the additive form is 0 where allowed, -inf where not."""
    q, k, v = normal(seed, (L_q, d)), normal(seed + 1, (L_k, d)), normal(seed + 2, (L_k, d))
    masked = impl.scaled_dot_product_attention(q, k, v, mask=np.ones((L_q, L_k), dtype=bool))
    plain = impl.scaled_dot_product_attention(q, k, v)
    check.close(impl, masked, plain, "an all-True mask equals no mask", size=tolerance.attention_output_size(v))


@claim("MASK-9")
@given(case=poisoned_cases(), large=st.sampled_from([1e4, 3e4]))
def test_large_finite_values_at_hidden_positions_change_no_visible_output(impl, case, large):
    """K of size 1e4 at keys hidden from some rows (scores in the tens of thousands) and V = 1000 at keys no query
    sees (ONNX's test) change no output of a row that does not see them: a hidden score is removed, not
    outweighed by a finite fill such as -1e4."""
    q, k, v, kw = case
    visible = _visible_cells(kw, q.shape[-2], k.shape[-2])
    unseen, partly = ~visible.any(axis=-2), visible.any(axis=-2) & ~visible.all(axis=-2)
    rows = ~(visible & partly[..., None, :]).any(axis=-1)
    k2 = np.where(partly[..., None], large * normal(5, k.shape), _poisoned(k, unseen, large))
    clean = impl.scaled_dot_product_attention(q, k, v, **kw)
    seen = impl.scaled_dot_product_attention(q, k2, _poisoned(v, unseen, 1000.0), **kw)
    check.close(impl, seen[rows], clean[rows], f"K of size {large:g} at hidden keys and V = 1000 at keys no query "
                "sees change no output of a row that does not see them", size=tolerance.attention_output_size(v))
