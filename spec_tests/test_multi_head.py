"""Chapter: multi-head attention (docs/multi_head.md). Claims MHA-1 .. MHA-9.

MHA-8 (heads specialise; 2 heads beat 1 at equal D) is an experiment: spec_tests/experiments/heads.py.

    MultiHead(Q, K, V) = Concat(head_1, ..., head_H) W^O + b_O                 (lecture note 1, formula)
    head_h = Attention(Q W^Q_h + b^Q_h, K W^K_h + b^K_h, V W^V_h + b^V_h)

    query (B, L_q, D), key and value (B, L_k, D); W^Q, W^K, W^V, W^O are (D, D) in the y = x W + b
    orientation; head h uses columns h*d_k:(h+1)*d_k of W^Q, W^K, W^V and rows h*d_k:(h+1)*d_k of W^O;
    d_k = D / H.
    Grouped-query attention (MHA-9): num_kv_heads = G divides H, W^K and W^V are (D, G*d_k), and query
    head h reads K/V head h // (H/G).
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import reference
from spec_tests.harness import carried, check, tolerance
from spec_tests.harness.feedback import SpecFailure
from spec_tests.harness.strategies import SEEDS, MHACase, mha_cases, mha_weights, normal
from spec_tests.harness.subject import not_applicable

claim = pytest.mark.claim
MHA = "multi_head_attention"


def _block(h: int, d_k: int) -> slice:
    return slice(h * d_k, (h + 1) * d_k)


def _head_inputs(case: MHACase, h: int, impl):
    """Head h's own projections of the inputs and weights the implementation sees (rounded to its dtype):
    x @ W[:, block h] + b[block h], each (B, L, d_k)."""
    w, blk = impl.round(case.weights), _block(h, case.d_k)

    def proj(x, name):
        y = impl.round(x) @ w[f"w_{name}"][:, blk]
        return y + w[f"b_{name}"][blk] if f"b_{name}" in w else y

    return proj(case.query, "q"), proj(case.key, "k"), proj(case.value, "v")


def _head_mask(case: MHACase, h: int):
    if case.mask is None:
        return None
    m = np.broadcast_to(case.mask, (case.B, case.num_heads, case.L_q, case.L_k))
    return m[:, h].copy()


def _one_head_weights(case: MHACase, h: int) -> dict:
    """Weights of one head of size D that computes head h: W_Q, W_K, W_V keep head h's columns in their first d_k
    (W_Q and b_Q times sqrt(D / d_k), so that the head's 1/sqrt(D) scales the scores by 1/sqrt(d_k)), W_O = I."""
    D, d_k, blk = case.D, case.d_k, _block(h, case.d_k)
    w = {"w_o": np.eye(D)}
    for name, factor in (("q", np.sqrt(D / d_k)), ("k", 1.0), ("v", 1.0)):
        w[f"w_{name}"] = np.zeros((D, D))
        w[f"w_{name}"][:, :d_k] = case.weights[f"w_{name}"][:, blk] * factor
        if f"b_{name}" in case.weights:
            w[f"b_{name}"] = np.zeros(D)
            w[f"b_{name}"][:d_k] = case.weights[f"b_{name}"][blk] * factor
    return w


def _head_output(impl, case: MHACase, h: int):
    """Head h's attention output, (B, L_q, d_k): the implementation's scaled dot-product attention of head h's
    projections; for a module with multi-head attention only, its multi-head attention with one head that computes
    head h (_one_head_weights: the first d_k output columns are that head's attention output)."""
    if impl.callable("scaled_dot_product_attention"):
        return impl.scaled_dot_product_attention(*_head_inputs(case, h, impl), mask=_head_mask(case, h),
                                                 is_causal=case.is_causal)
    mask = _head_mask(case, h)
    out = impl.multi_head_attention(case.query, case.key, case.value, _one_head_weights(case, h), 1,
                                    mask=None if mask is None else mask[:, None], is_causal=case.is_causal)
    return out[..., :case.d_k]


def _on_one_array(impl, case: MHACase, **kwargs):
    """multi_head_attention given one array where the case shares one: self-attention passes the same array as
    query, key and value (CONTRACT.md), cross-attention the same memory as key and value; (seen, the three inputs
    as NumPy arrays, what is shared)."""
    weights, native_kwargs = impl.native(case.weights), impl.native({**case.kwargs, **kwargs})
    if case.self_attention:
        x = impl.native(case.query)
        out = impl.call_native(MHA, x, x, x, weights, case.num_heads, **native_kwargs)
        return impl.to_numpy(out), (case.query, case.query, case.query), "query, key and value"
    memory = impl.native(case.key)
    out = impl.call_native(MHA, impl.native(case.query), memory, memory, weights, case.num_heads, **native_kwargs)
    return impl.to_numpy(out), (case.query, case.key, case.key), "key and value"


# ---------------------------------------------------------------------------------- MHA-1
@claim("MHA-1")
@pytest.mark.parametrize("B, L_q, L_k, H, d_k, self_attention",
                         [(2, 4, 4, 8, 8, True), (1, 1, 1, 2, 3, True), (3, 5, 9, 4, 2, False), (2, 7, 2, 1, 5, False)],
                         ids=["self-2x4x64", "self-L1", "cross-Lq<Lk", "cross-Lq>Lk"])
def test_output_shape(impl, B, L_q, L_k, H, d_k, self_attention):
    """Self-attention returns (B, L, D), the input's shape; cross-attention returns (B, L_q, D)."""
    case = MHACase(B, L_q, L_k, H, d_k, seed=3, self_attention=self_attention)
    out = check.oracle(impl, MHA, *case.args)
    check.shape(impl, out, (B, case.L_q, case.D), "multi_head_attention output shape is (B, L_q, D)")


# ---------------------------------------------------------------------------------- MHA-2
@claim("MHA-2")
@pytest.mark.parametrize("D, H", [(512, 7), (12, 5), (6, 4), (9, 2)])
def test_d_model_not_divisible_by_heads_raises(impl, D, H):
    """d_model % num_heads != 0 raises ValueError naming both numbers (lecture note 2 §3.1's 512 and 7)."""
    x = normal(1, (1, 2, D))
    check.raises_value_error(impl, MHA, (x, x, x, mha_weights(2, D, False), H), {}, names=(D, H))
    check.raises_value_error(impl, "split_heads", (x, H), {}, names=(D, H))


@claim("MHA-2")
@pytest.mark.parametrize("D, H", [(512, 8), (12, 3), (7, 7), (6, 1)])
def test_head_size_is_d_model_over_heads(impl, D, H):
    """d_k = D / H: split_heads((B, L, D), H) is (B, H, L, D/H), e.g. 512 / 8 = 64."""
    heads = impl.split_heads(normal(1, (2, 3, D)), H)
    check.shape(impl, heads, (2, H, 3, D // H), f"split_heads of D={D} into H={H} heads gives d_k = {D // H}")


# ---------------------------------------------------------------------------------- MHA-3
@st.composite
def head_arrays(draw):
    lead = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple))
    H, L, d = draw(st.integers(1, 5)), draw(st.integers(1, 6)), draw(st.integers(1, 5))
    return normal(draw(SEEDS), (*lead, H, L, d))


@claim("MHA-3")
@given(heads=head_arrays())
def test_merge_heads_concatenates_along_features(impl, heads):
    """merge_heads(x)[..., l, h*d:(h+1)*d] == x[..., h, l, :] exactly."""
    *lead, H, L, d = heads.shape
    merged = impl.merge_heads(heads)
    check.shape(impl, merged, (*lead, L, H * d), "merge_heads: (..., H, L, d) -> (..., L, H*d)")
    expected = np.concatenate([heads[..., h, :, :] for h in range(H)], axis=-1)  # (..., L, H*d)
    check.exactly(impl, merged, impl.round(expected), "merge_heads(x)[..., l, h*d:(h+1)*d] == x[..., h, l, :]")


@claim("MHA-3")
@given(heads=head_arrays())
def test_split_heads_takes_feature_blocks(impl, heads):
    """split_heads(x, H)[..., h, l, :] == x[..., l, h*d:(h+1)*d] exactly, and split/merge are inverses."""
    *lead, H, L, d = heads.shape
    x = np.concatenate([heads[..., h, :, :] for h in range(H)], axis=-1)  # (..., L, H*d)
    split = impl.split_heads(x, H)
    check.exactly(impl, split, impl.round(heads), "split_heads(x, H)[..., h, l, :] == x[..., l, h*d:(h+1)*d]")
    check.exactly(impl, impl.merge_heads(split), impl.round(x), "merge_heads(split_heads(x, H)) == x")
    check.exactly(impl, impl.split_heads(impl.merge_heads(heads), H), impl.round(heads),
                  "split_heads(merge_heads(x), H) == x")


@claim("MHA-3")
@given(case=mha_cases())
def test_identity_output_projection_exposes_each_head(impl, case):
    """With W_O = I and b_O = 0, the output's column block h is head h's attention output."""
    case.weights["w_o"] = np.eye(case.D)
    case.weights.pop("b_o", None)
    out = check.oracle(impl, MHA, *case.args, **case.kwargs)
    for h in range(case.num_heads):
        q, k, v = _head_inputs(case, h, impl)
        head = _head_output(impl, case, h)
        check.close(impl, out[..., _block(h, case.d_k)], head,
                    f"with W_O = I, output columns {h * case.d_k}:{(h + 1) * case.d_k} are head {h}'s attention output",
                    size=tolerance.attention_size(q, k, v))


# ---------------------------------------------------------------------------------- MHA-4
@claim("MHA-4")
@given(case=mha_cases())
def test_fused_projection_equals_separate_heads(impl, case):
    """The fused D x D projection equals H separate D x d_k projections run one head at a time."""
    out = impl.multi_head_attention(*case.args, **case.kwargs)
    heads = [_head_output(impl, case, h) for h in range(case.num_heads)]
    concat = np.concatenate(heads, axis=-1)  # (B, L_q, H*d_k)
    separate = concat @ case.weights["w_o"] + case.weights.get("b_o", 0.0)
    check.close(impl, out, separate, "fused multi-head attention equals H separate heads, concatenated, times W_O",
                size=tolerance.multi_head_size(*case.args))


@claim("MHA-4")
@given(case=mha_cases(masked=False, causal=False).filter(lambda c: c.num_heads > 1), h=st.integers(0, 3),
       which=st.sampled_from(["w_q", "w_k", "w_v"]))
def test_changing_one_heads_weights_changes_only_its_block(impl, case, h, which):
    """With W_O = I, changing head h's columns of W_Q (or W_K, W_V) changes only output block h."""
    h = h % case.num_heads
    case.weights["w_o"] = np.eye(case.D)
    case.weights.pop("b_o", None)
    out = impl.multi_head_attention(*case.args)
    changed = {k: v.copy() for k, v in case.weights.items()}
    changed[which][:, _block(h, case.d_k)] += 3.0 * normal(case.seed + 20, (case.D, case.d_k))
    out2 = impl.multi_head_attention(case.query, case.key, case.value, changed, case.num_heads)
    others = np.ones(case.D, dtype=bool)
    others[_block(h, case.d_k)] = False
    check.close(impl, out2[..., others], out[..., others],
                f"changing head {h}'s columns of {which} leaves every other head's output block unchanged",
                size=max(tolerance.multi_head_size(*case.args),
                         tolerance.multi_head_size(case.query, case.key, case.value, changed, case.num_heads)))


# ---------------------------------------------------------------------------------- MHA-5
@claim("MHA-5")
@given(case=mha_cases(masked=None, causal=None))  # masks pass through (rows keep a visible key; causal is square)
@example(case=MHACase(1, 2, 2, 2, 2, seed=0))
@example(case=MHACase(2, 3, 3, 4, 3, seed=1, self_attention=False, mask_kind="padding", is_causal=True))
def test_multi_head_attention_matches_oracle(impl, case):
    """Concat(head_1..head_H) W^O + b_O equals the float64 reference (random weights, biases, masks, causal)."""
    check.oracle(impl, MHA, *case.args, **case.kwargs)


def _some_biases_only(impl, case: MHACase, kept: tuple, G: int | None = None) -> None:
    """Weights with only the biases in `kept` (each is optional on its own), K/V projections G * d_k wide when G is
    given: one array passed where the case shares one equals a copy for each, and the reference."""
    kv, grouped = ({}, "") if G is None else ({"num_kv_heads": G}, f"num_kv_heads={G} ")
    case.weights = {n: w for n, w in mha_weights(case.seed + 10, case.D, True, None if G is None else G * case.d_k)
                    .items() if not n.startswith("b_") or n in kept}
    seen, inputs, shared = _on_one_array(impl, case, **kv)  # one array where the case shares one, as a caller passes it
    separate = check.oracle(impl, MHA, *inputs, case.weights, case.num_heads, **kv, **case.kwargs)  # a copy for each
    check.close(impl, seen, separate, f"{grouped}with biases {', '.join(kept)} "
                f"only, one array passed as {shared}, equals the same call with a copy of it for each",
                size=tolerance.multi_head_size(*inputs, case.weights, case.num_heads))


@claim("MHA-5")
@given(case=mha_cases(masked=None, causal=None), kept=st.sampled_from([("b_q", "b_o"), ("b_k",), ("b_v", "b_o")]))
def test_biases_given_for_some_projections_only_match_oracle(impl, case, kept):
    """Each bias is optional on its own (CONTRACT.md): a weights dict with some of b_q, b_k, b_v, b_o and not the
    others (a missing one is no bias) equals the reference, also when the key and value projections share one call."""
    _some_biases_only(impl, case, kept)


@claim("MHA-5")
@given(case=mha_cases(masked=None, causal=None))
@example(case=MHACase(2, 3, 3, 2, 2, seed=0))  # self-attention: one array three times, with biases
@example(case=MHACase(2, 3, 4, 2, 2, seed=1, self_attention=False))  # one memory array as key and value
def test_one_array_passed_as_several_inputs_matches_oracle(impl, case):
    """The same array as query, key and value (self-attention), or as key and value (one memory), gives what
    separate copies give, and the reference: a shortcut that projects a shared input once must not change it."""
    seen, inputs, shared = _on_one_array(impl, case)
    separate = check.oracle(impl, MHA, *inputs, case.weights, case.num_heads, **case.kwargs)  # a copy for each
    check.close(impl, seen, separate, f"multi_head_attention with one array passed as {shared} equals the same call "
                "with a copy of it for each", size=tolerance.multi_head_size(*inputs, case.weights, case.num_heads))


# ---------------------------------------------------------------------------------- MHA-6
@claim("MHA-6")
@given(case=mha_cases().map(lambda c: MHACase(c.B, c.L_q, c.L_k, 1, c.d_k * max(c.num_heads, 1), c.seed,
                                              c.self_attention, c.bias, c.mask_kind, c.is_causal)))
def test_one_head_is_single_head_attention_with_projections(impl, case):
    """H = 1: softmax((x W_Q + b_Q)(x W_K + b_K)^T / sqrt(D)) (x W_V + b_V) W_O + b_O."""
    out = check.oracle(impl, MHA, *case.args, **case.kwargs)
    single = _head_output(impl, case, 0)
    expected = single @ case.weights["w_o"] + case.weights.get("b_o", 0.0)
    check.close(impl, out, expected, "one head equals scaled dot-product attention of the projections, times W_O",
                size=tolerance.multi_head_size(*case.args))


@claim("MHA-6")
@given(case=mha_cases(), perm_seed=SEEDS)
def test_permuting_heads_changes_nothing(impl, case, perm_seed):
    """Permuting heads (W_Q, W_K, W_V column blocks, their biases, W_O row blocks, together) keeps the output."""
    perm = np.random.default_rng(perm_seed).permutation(case.num_heads)
    idx = np.concatenate([np.arange(case.d_k) + p * case.d_k for p in perm])  # new feature order
    w = {k: v.copy() for k, v in case.weights.items()}
    for name in ("w_q", "w_k", "w_v"):
        w[name] = w[name][:, idx]
    for name in ("b_q", "b_k", "b_v"):
        if name in w:
            w[name] = w[name][idx]
    w["w_o"] = w["w_o"][idx, :]
    mask = case.mask
    if mask is not None and mask.ndim == 4 and mask.shape[1] > 1:
        mask = mask[:, perm]  # a per-head mask moves with its head
    out = impl.multi_head_attention(*case.args, **case.kwargs)
    out2 = impl.multi_head_attention(case.query, case.key, case.value, w, case.num_heads, mask=mask,
                                     is_causal=case.is_causal)
    check.close(impl, out2, out, f"permuting the heads by {perm.tolist()} leaves the output unchanged",
                size=tolerance.multi_head_size(*case.args))


# ---------------------------------------------------------------------------------- MHA-7
def _torch_mha(query, key, value, w, H, key_padding, causal):
    """torch.nn.MultiheadAttention in float64, with our weights mapped to its storage."""
    import torch

    D = query.shape[-1]
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))  # noqa: E731
    zeros = np.zeros(D)
    mha = torch.nn.MultiheadAttention(D, H, bias=True, batch_first=True, dtype=torch.float64)
    with torch.no_grad():  # torch stores (out, in) and computes x @ W.T, so its W is our W.T
        mha.in_proj_weight.copy_(t(np.concatenate([w["w_q"].T, w["w_k"].T, w["w_v"].T], axis=0)))
        mha.in_proj_bias.copy_(t(np.concatenate([w.get("b_q", zeros), w.get("b_k", zeros), w.get("b_v", zeros)])))
        mha.out_proj.weight.copy_(t(w["w_o"].T))
        mha.out_proj.bias.copy_(t(w.get("b_o", zeros)))
    L_q, L_k = query.shape[1], key.shape[1]
    # torch's bool masks mean True = NOT allowed / ignore this key: the opposite of ours
    attn_mask = t(~reference.causal_mask(L_q, L_k)).bool() if causal else None
    kpm = None if key_padding is None else t(~key_padding).bool()
    out, _ = mha(t(query), t(key), t(value), key_padding_mask=kpm, attn_mask=attn_mask, need_weights=False)
    return out.detach().numpy()


@claim("MHA-7")
@given(case=mha_cases(masked=False, causal=False), padded=st.booleans(), causal=st.booleans(), data=st.data())
def test_agrees_with_torch_multihead_attention(impl, case, padded, causal, data):
    """Same weights, mapped to torch's (out, in) storage and its True-means-ignore padding mask: same output."""
    try:
        import torch  # noqa: F401
    except ImportError:
        not_applicable("torch.nn.MultiheadAttention is the yardstick here, and torch is not installed")
    causal = causal and case.L_q == case.L_k  # square: no row sees nothing, and the alignment is MASK-3's subject
    if (padded or causal) and _masks_unless_charged(impl, True, True) == (None, False):
        padded, causal = False, False  # its multi-head masking fails the masks chapter (charged there)
    lowest = case.L_k - case.L_q + 1 if causal else 1  # every query keeps at least one real key
    lengths = np.array([data.draw(st.integers(lowest, case.L_k), label="length") for _ in range(case.B)])
    key_padding = (np.arange(case.L_k)[None, :] < lengths[:, None]) if padded else None  # (B, L_k), True = real
    mask = None if key_padding is None else key_padding[:, None, None, :]  # ours: (B, 1, 1, L_k), True = attend
    seen = impl.multi_head_attention(*case.args, mask=mask, is_causal=causal)
    query, key, value, weights = impl.round(case.args[:4])  # what the implementation saw
    expected = _torch_mha(query, key, value, weights, case.num_heads, key_padding, causal)
    args, kwargs = (query, key, value, weights, case.num_heads), {"mask": mask, "is_causal": causal}
    what = "multi_head_attention against torch.nn.MultiheadAttention with the same weights"
    check.carried_forward(impl, seen, reference.multi_head_attention, args, kwargs, what, expected=expected,
                          carry=("scaled_dot_product_attention",))  # a wrong SDPA is charged to its own claims


# ---------------------------------------------------------------------------------- MHA-8
# The experiment (spec_tests/experiments/heads.py): one causal attention layer, trained to predict both
# x[i-1] and x[i-3] at every position, with 2 heads or 1 head at the same D. Its first seed's trained
# models are stored (heads_trained.npz): running them is a demonstration
# (tests/demonstrations/test_trained_heads.py); the slow test trains afresh over several seeds.


@claim("MHA-8")
@pytest.mark.slow
def test_heads_specialise_and_two_beat_one_at_equal_d():
    """Trained from several seeds: with 2 heads both read-outs reach >= 0.95 and each head puts >= 0.8 of its
    weight on a different one of the two offsets; with 1 head at the same D the mean accuracy is at least
    0.25 lower, seed by seed. Numbers and the attention patterns: docs/multi_head.md."""
    pytest.importorskip("torch")
    from spec_tests.experiments import heads as experiment
    from spec_tests.experiments import sizes

    results = experiment.run(**sizes("heads"))
    table = [(r.heads, r.seed, [round(a, 3) for a in r.accuracy], r.favourite) for r in results]
    for seed in {r.seed for r in results}:
        one = next(r for r in results if r.seed == seed and r.heads == 1)
        two = next(r for r in results if r.seed == seed and r.heads == 2)
        assert min(two.accuracy) >= 0.95, table
        assert all(max(row) >= 0.8 for row in two.pattern), table
        assert sorted(two.favourite) == sorted(experiment.OFFSETS), table
        assert one.mean_accuracy <= two.mean_accuracy - 0.25, table


# ---------------------------------------------------------------------------------- MHA-9
def _divisors(n: int) -> list[int]:
    return [g for g in range(1, n + 1) if n % g == 0]


def _gqa(case: MHACase, G: int) -> tuple[MHACase, int]:
    """The case with K/V projections of shape (D, G*d_k): G = num_kv_heads key/value heads."""
    case.weights = mha_weights(case.seed + 10, case.D, case.bias, kv_dim=G * case.d_k)
    return case, G


@st.composite
def gqa_cases(draw, masked=False, causal=False):
    """An MHA case with G = num_kv_heads drawn among the divisors of H."""
    case = draw(mha_cases(masked=masked, causal=causal, max_heads=6))
    return _gqa(case, draw(st.sampled_from(_divisors(case.num_heads)), label="num_kv_heads"))


def _repeat_kv_columns(w, G: int, H: int, d_k: int):
    """Weights with each K/V head's block repeated for its H/G query heads: GQA written as plain MHA."""
    full = dict(w)
    heads = [h // (H // G) for h in range(H)]  # K/V head of each query head
    for name in ("w_k", "w_v"):
        full[name] = np.concatenate([w[name][:, _block(g, d_k)] for g in heads], axis=1)  # (D, D)
    for name in ("b_k", "b_v"):
        if name in w:
            full[name] = np.concatenate([w[name][_block(g, d_k)] for g in heads])  # (D,)
    return full


@claim("MHA-9")
@given(gqa=gqa_cases(masked=None, causal=None))
@example(gqa=_gqa(MHACase(2, 3, 3, 4, 2, seed=5, mask_kind="padding", is_causal=True), 2))
@example(gqa=_gqa(MHACase(1, 3, 5, 4, 2, seed=6, mask_kind="full"), 2))  # a mask per query head, G < H
@example(gqa=_gqa(MHACase(2, 4, 4, 4, 1, seed=7, mask_kind="full", is_causal=True), 1))  # MQA, a mask per head
def test_grouped_query_attention_matches_oracle(impl, gqa):
    """multi_head_attention(..., num_kv_heads=G) equals the reference for every G dividing H, masks and causal."""
    case, G = gqa
    check.oracle(impl, MHA, *case.args, num_kv_heads=G, **case.kwargs)


@claim("MHA-9")
@given(gqa=gqa_cases())
@example(gqa=_gqa(MHACase(2, 3, 3, 4, 2, seed=3), 2))  # self-attention on one array, G = 2 < H = 4
@example(gqa=_gqa(MHACase(1, 2, 3, 4, 2, seed=4, self_attention=False), 1))  # one memory as key and value, MQA
def test_grouped_query_attention_on_one_array_matches_oracle(impl, gqa):
    """num_kv_heads=G with the same array as query, key and value (or as key and value) gives what separate copies
    give: with G < H the K/V projections are narrower than W^Q, so they cannot be fused with it as for G = H."""
    case, G = gqa
    seen, inputs, shared = _on_one_array(impl, case, num_kv_heads=G)
    separate = check.oracle(impl, MHA, *inputs, case.weights, case.num_heads, num_kv_heads=G, **case.kwargs)
    check.close(impl, seen, separate, f"multi_head_attention(..., num_kv_heads={G}) with one array passed as {shared} "
                "equals the same call with a copy of it for each",
                size=tolerance.multi_head_size(*inputs, case.weights, case.num_heads))


@claim("MHA-9")
@given(gqa=gqa_cases(), kept=st.sampled_from([("b_v",), ("b_k", "b_o"), ("b_q", "b_v")]))
@example(gqa=_gqa(MHACase(1, 2, 3, 4, 2, seed=4, self_attention=False), 2), kept=("b_v",))  # one memory, G = 2
def test_gqa_with_biases_for_some_projections_only(impl, gqa, kept):
    """num_kv_heads=G with some of the biases and not the others: a missing K or V bias is zeros of the K/V
    projection's width G * d_k, not of D, also when one array is passed as key and value."""
    case, G = gqa
    _some_biases_only(impl, case, kept, G)


@claim("MHA-9")
@given(gqa=gqa_cases())
@example(gqa=_gqa(MHACase(1, 4, 4, 4, 2, seed=2), 1))
def test_gqa_equals_repeating_each_kv_head(impl, gqa):
    """GQA equals MHA whose K/V weights repeat each K/V head's block for the H/G consecutive query heads
    that share it (query head h reads K/V head h // (H/G), not h % G)."""
    case, G = gqa
    H = case.num_heads
    out = impl.multi_head_attention(*case.args, num_kv_heads=G, **case.kwargs)
    full = _repeat_kv_columns(case.weights, G, H, case.d_k)
    plain = impl.multi_head_attention(case.query, case.key, case.value, full, H, **case.kwargs)
    check.close(impl, out, plain,
                f"num_kv_heads={G} equals multi-head attention with each K/V head repeated {H // G} times",
                size=tolerance.multi_head_size(case.query, case.key, case.value, full, H))


@claim("MHA-9")
@given(case=mha_cases())
def test_as_many_kv_heads_as_heads_is_multi_head_attention(impl, case):
    """num_kv_heads = H (D x D weights) is ordinary multi-head attention."""
    out = impl.multi_head_attention(*case.args, num_kv_heads=case.num_heads, **case.kwargs)
    check.close(impl, out, impl.multi_head_attention(*case.args, **case.kwargs),
                f"num_kv_heads = num_heads = {case.num_heads} equals num_kv_heads=None",
                size=tolerance.multi_head_size(*case.args))


@claim("MHA-9")
@given(case=mha_cases().filter(lambda c: c.num_heads > 1))
def test_one_kv_head_is_multi_query_attention(impl, case):
    """G = 1 (multi-query attention): with W_O = I, output block h is Attention(Q W_h^Q, K W^K, V W^V)
    with the one shared (D, d_k) key and value projection."""
    d_k = case.d_k
    w = mha_weights(case.seed + 10, case.D, case.bias, kv_dim=d_k)
    w["w_o"] = np.eye(case.D)
    w.pop("b_o", None)
    out = impl.multi_head_attention(case.query, case.key, case.value, w, case.num_heads, num_kv_heads=1,
                                    **case.kwargs)
    k = case.key @ w["w_k"] + w.get("b_k", 0.0)  # (B, L_k, d_k): the one K head
    v = case.value @ w["w_v"] + w.get("b_v", 0.0)
    for h in range(case.num_heads):
        q = case.query @ w["w_q"][:, _block(h, d_k)] + (w["b_q"][_block(h, d_k)] if "b_q" in w else 0.0)
        head = impl.scaled_dot_product_attention(q, k, v, mask=_head_mask(case, h), is_causal=case.is_causal)
        check.close(impl, out[..., _block(h, d_k)], head,
                    f"with one K/V head and W_O = I, output block {h} is head {h}'s query against the shared K, V",
                    size=tolerance.attention_size(q, k, v))


@claim("MHA-9")
@pytest.mark.parametrize("H, G", [(8, 2), (4, 1), (6, 3)])
def test_kv_projections_shrink_by_heads_over_groups(impl, H, G):
    """With G K/V heads, W^K and W^V are (D, G*d_k): H/G times fewer parameters. (D, D) ones are refused."""
    d_k = 2
    D = H * d_k
    x = normal(1, (2, 3, D))
    small = mha_weights(3, D, True, kv_dim=G * d_k)
    out = check.oracle(impl, MHA, x, x, x, small, H, num_kv_heads=G)
    check.shape(impl, out, (2, 3, D), f"GQA with W^K, W^V of shape ({D}, {G * d_k}) gives (B, L, D)")
    check.raises_value_error(impl, MHA, (x, x, x, mha_weights(3, D, False), H), {"num_kv_heads": G},
                             names=(G * d_k,), what=f"num_kv_heads={G} with a ({D}, {D}) W^K raises ValueError "
                                                    f"naming the expected width {G * d_k}")


@claim("MHA-9")
@pytest.mark.parametrize("H, G", [(8, 3), (4, 0), (6, 4)])
def test_kv_heads_must_divide_heads(impl, H, G):
    """num_kv_heads must be at least 1 and divide num_heads: (8, 3) raises ValueError naming both; 0 names the 0."""
    d_k = 2
    D = H * d_k
    x = normal(1, (1, 2, D))
    w = mha_weights(3, D, False, kv_dim=max(G, 1) * d_k)
    check.raises_value_error(impl, MHA, (x, x, x, w, H), {"num_kv_heads": G}, names=(G, H) if G else (G,))


@claim("MHA-9")
@pytest.mark.parametrize("H, G", [(8, 8), (8, 2), (8, 1)])
def test_kv_cache_shrinks_by_heads_over_groups(H, G):
    """The reference's decoding cache (reference.kv_cache) holds 2·B·G·T·d_k numbers: H/G times fewer than MHA's."""
    d_k, B, T = 4, 2, 9
    D = H * d_k
    x = normal(0, (B, T, D))
    _, cache = reference.decode(x, mha_weights(1, D, True, kv_dim=G * d_k), H, num_kv_heads=G, prefill=3)
    assert cache.keys.shape == (B, G, T, d_k)
    assert cache.size == 2 * B * G * T * d_k == (2 * B * H * T * d_k) // (H // G)


# ---------------------------------------------------------------------------------- MHA-10
# The later chapters' keywords reach every head (CONTRACT.md, "Multi-head attention passes them through"):
# window_size and softcap as given, sinks (H,) one per head, segment ids one per token, (B, L_q) and (B, L_k).
HEAD_KEYWORDS = ["window_size", "segment_ids", "softcap", "sinks"]  # one test each: a module may take some only


@st.composite
def head_keyword_cases(draw, which: str):
    """A multi-head problem (padding mask or none, causal or not) and the later keyword `which`, as keywords."""
    case = draw(mha_cases(masked=None, causal=None, max_heads=3))
    if which == "window_size":
        side = st.one_of(st.none(), st.integers(0, 3))
        return case, {"window_size": (draw(side, label="left"), draw(side, label="right"))}
    if which == "softcap":
        return case, {"softcap": draw(st.sampled_from([0.5, 2.0, 10.0]), label="cap")}
    if which == "sinks":
        return case, {"sinks": normal(case.seed + 7, (case.num_heads,), scale=2.0)}
    ids = lambda L: np.sort(np.random.default_rng(case.seed + L).integers(0, 3, (case.B, L)), axis=-1)  # noqa: E731
    return case, {"q_segment_ids": ids(case.L_q), "kv_segment_ids": ids(case.L_k)}


def _against_reference_with_keywords(impl, *args, **kwargs):
    """check.oracle for multi_head_attention with a later keyword; a keyword whose own attention already errs on
    these heads is charged to its own chapter (error carried forward: carried.judge_feature_carried)."""
    try:
        check.oracle(impl, MHA, *args, **kwargs)
    except SpecFailure as failure:
        carried.judge_feature_carried(impl, MHA, args, kwargs, failure,
                                      lambda s, e, bound, what: check.compare(impl, s, e, bound, what))


def _masks_unless_charged(impl, mask, is_causal):
    """(mask, is_causal) as drawn; (None, False) when the implementation's multi-head attention fails the masks
    chapter's claims on its own masked calls (charged there, error carried forward): this claim's subject is then
    judged without the masks."""
    if (mask is not None or is_causal) and carried.masking_charged(impl, MHA, alone=True):
        return None, False
    return mask, is_causal


def _per_head(keywords):
    """The keywords as each head's scaled_dot_product_attention takes them: segment ids gain a head axis."""
    return {n: (a[:, None, :] if n.endswith("segment_ids") else a) for n, a in keywords.items()}


@claim("MHA-10")
@pytest.mark.parametrize("which", HEAD_KEYWORDS)
@given(data=st.data())
def test_mha_passes_the_later_keywords_to_every_head(impl, which, data):
    """multi_head_attention with window_size, segment ids, softcap or sinks equals the reference's."""
    c, keywords = data.draw(head_keyword_cases(which), label="case")
    mask, is_causal = _masks_unless_charged(impl, c.mask, c.is_causal)
    _against_reference_with_keywords(impl, c.query, c.key, c.value, c.weights, c.num_heads, mask=mask,
                                     is_causal=is_causal, **keywords)


@claim("MHA-10")
@pytest.mark.parametrize("which", HEAD_KEYWORDS)
def test_gqa_passes_the_later_keywords_to_every_head(impl, which):
    """With G = 2 K/V heads for H = 4 query heads, each keyword still reaches every query head: the output
    equals the reference's (each K/V head shared by its two query heads, not broadcast over all four)."""
    c, G = _gqa(MHACase(2, 3, 4, 4, 2, seed=11, self_attention=False, mask_kind="padding"), 2)
    ids = lambda L: np.sort(np.random.default_rng(L).integers(0, 3, (c.B, L)), axis=-1)  # noqa: E731
    keywords = {"window_size": {"window_size": (1, 1)}, "softcap": {"softcap": 2.0},
                "sinks": {"sinks": normal(c.seed + 7, (c.num_heads,), scale=2.0)},
                "segment_ids": {"q_segment_ids": ids(c.L_q), "kv_segment_ids": ids(c.L_k)}}[which]
    mask, is_causal = _masks_unless_charged(impl, c.mask, c.is_causal)
    _against_reference_with_keywords(impl, *c.args, num_kv_heads=G, mask=mask, is_causal=is_causal, **keywords)


@claim("MHA-10")
@pytest.mark.parametrize("which", HEAD_KEYWORDS)
@given(data=st.data())
def test_mha_with_a_keyword_equals_its_heads_given_it(impl, which, data):
    """The keyword on multi_head_attention equals the four steps with each head's attention given the keyword
    (the implementation's own scaled_dot_product_attention, segment ids with a head axis, (B, 1, L))."""
    c, keywords = data.draw(head_keyword_cases(which), label="case")
    mask, is_causal = _masks_unless_charged(impl, c.mask, c.is_causal)
    out = impl.multi_head_attention(c.query, c.key, c.value, c.weights, c.num_heads, mask=mask, is_causal=is_causal,
                                    **keywords)
    each = _per_head(keywords)

    def heads(q, k, v, mask=None, is_causal=False):
        return impl.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, **each)

    composed = reference.multi_head.multi_head_attention_from(c.query, c.key, c.value, c.weights, c.num_heads,
                                                              mask=mask, is_causal=is_causal,
                                                              scaled_dot_product_attention=heads)
    check.close(impl, out, composed, f"multi_head_attention(..., {', '.join(keywords)}) equals its heads' attention "
                f"given {', '.join(each)}", size=tolerance.multi_head_size(c.query, c.key, c.value, c.weights,
                                                                            c.num_heads))
