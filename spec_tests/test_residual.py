"""Chapter: residual blocks and norm placement (docs/residual.md). Claims RES-1 .. RES-3.

    Post-LN:  y = LN(x + sublayer(x))          Pre-LN:  y = x + sublayer(LN(x))          (lecture note 2 §3.3)
    Xavier/Glorot:  Var(W_ij) = 2 / (fan_in + fan_out)

RES-1 builds both blocks from the implementation's own multi_head_attention and layer_norm and
compares them with the reference's (reference/residual.py). RES-3 runs activations through the
implementation's projections. RES-2 is a seeded experiment at initialisation (torch only, marked
slow; spec_tests/experiments/norm_placement.py), whose numbers the docs show.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import reference
from reference import init, residual
from spec_tests.harness import carried, check
from spec_tests.harness.strategies import SEEDS, mha_weights, normal

claim = pytest.mark.claim
MHA = "multi_head_attention"


# ---------------------------------------------------------------------------------- RES-1
@st.composite
def block_cases(draw):
    B, L = draw(st.integers(1, 3), label="B"), draw(st.integers(1, 8), label="L")
    H, d_k = draw(st.integers(1, 4), label="num_heads"), draw(st.sampled_from([1, 2, 4]), label="d_k")
    seed = draw(SEEDS, label="seed")
    D = H * d_k
    x = normal(seed, (B, L, D), draw(st.sampled_from([1.0, 5.0]), label="scale"))
    gamma, beta = normal(seed + 1, (D,), 0.3, 1.0), normal(seed + 2, (D,), 0.3)
    return x, mha_weights(seed + 3, D, True), H, gamma, beta, draw(st.booleans(), label="is_causal")


def _oracle_block(norm_first, H, is_causal):
    """The reference's block as a function of (x, weights, gamma, beta), on the layer_norm and multi_head_attention
    given: the reference's, or the implementation's where error is carried forward (check.carried_forward)."""

    def block(x, w, gamma, beta, *, layer_norm=reference.layer_norm,
              multi_head_attention=reference.multi_head_attention):
        def attention(h):
            return multi_head_attention(h, h, h, w, H, is_causal=is_causal)

        def norm(h):
            return layer_norm(h, gamma, beta, 1e-5)

        return residual.residual_block(x, attention, norm, norm_first)

    return block


@claim("RES-1")
@given(case=block_cases(), norm_first=st.booleans())
def test_pre_and_post_ln_blocks_keep_the_shape(impl, case, norm_first):
    """x + MHA(LN(x)) and LN(x + MHA(x)), built from the implementation's own functions, are (B, L, D)
    and equal the reference's blocks (reference/residual.py)."""
    x, w, H, gamma, beta, is_causal = case

    def attention(h):
        return impl.multi_head_attention(h, h, h, w, H, is_causal=is_causal)

    if norm_first:
        out, name = x + attention(impl.layer_norm(x, gamma, beta)), "Pre-LN x + MHA(LN(x))"
    else:
        out, name = impl.layer_norm(x + attention(x), gamma, beta), "Post-LN LN(x + MHA(x))"
    check.shape(impl, out, x.shape, f"the {name} block keeps the shape (B, L, D)")
    oracle_fn = _oracle_block(norm_first, H, is_causal)
    r = impl.round((x, w, gamma, beta))
    last = None if norm_first else ("layer_norm", (r[0] + reference.multi_head_attention(r[0], r[0], r[0], r[1], H,
                                                                                          is_causal=is_causal), *r[2:]))
    what = f"the {name} block from this implementation's functions against the reference's"
    check.carried_forward(impl, out, oracle_fn, (x, w, gamma, beta), {}, what, last=last,
                          carry=("layer_norm", "multi_head_attention"))  # a bug of either is charged to its claims


@claim("RES-1")
@pytest.mark.parametrize("norm_first", [False, True], ids=["post-ln", "pre-ln"])
def test_a_stack_of_encoder_layers_keeps_the_shape(norm_first):
    """The reference's encoder layer (attention, then FFN, each in a residual block) maps (B, L, D) to (B, L, D),
    layer after layer, for self-attention with and without a causal mask."""
    rng = np.random.default_rng(0)
    B, L, D, F, H = 2, 5, 8, 32, 2
    x = rng.standard_normal((B, L, D))
    for layer in range(4):
        params = {"attention": mha_weights(layer, D, True), "w_1": init.xavier_uniform(rng, D, F),
                  "b_1": np.zeros(F), "w_2": init.xavier_uniform(rng, F, D), "b_2": np.zeros(D),
                  "gamma_1": np.ones(D), "beta_1": np.zeros(D), "gamma_2": np.ones(D), "beta_2": np.zeros(D)}
        x = residual.encoder_layer(x, params, H, norm_first, is_causal=layer % 2 == 1)
        assert x.shape == (B, L, D)
        assert np.isfinite(x).all()


# ---------------------------------------------------------------------------------- RES-2
@claim("RES-2")
@pytest.mark.slow
def test_post_ln_gradients_grow_toward_the_output_and_pre_ln_do_not():
    """At initialisation (Xavier weights, 6 and 12 layers, several seeds): Post-LN's per-layer gradient norm
    grows from the first layer to the last; Pre-LN's does not grow (it falls toward the output); and at the
    last layer Post-LN's gradient is larger than Pre-LN's by a factor that grows with depth (Xiong et al.
    2020, Theorem 1: O(1) against O(1/sqrt(N))). Numbers and plot: docs/residual.md."""
    pytest.importorskip("torch")
    from spec_tests.experiments import norm_placement, sizes

    size = sizes("norm_placement")
    results = norm_placement.run(depths=(6, 12), **size)
    report = {(r.layers, r.placement, r.seed): round(r.ratio_last_first, 2) for r in results}
    for r in results:
        assert all(np.isfinite(r.grad_norm)) and min(r.grad_norm) > 0, r
        if r.norm_first:
            assert r.ratio_last_first < 1.0, f"Pre-LN gradients grew toward the output: {report}"
        else:
            floor = 1.0 if r.layers == 6 else 1.2
            assert r.ratio_last_first > floor, f"Post-LN last/first gradient norm not above {floor}: {report}"
    for seed in size["seeds"]:
        shallow = norm_placement.post_over_pre_last(results, 6, seed)
        deep = norm_placement.post_over_pre_last(results, 12, seed)
        assert shallow > 1.4 and deep > shallow, \
            f"seed {seed}: Post-LN / Pre-LN last-layer gradient {shallow:.2f} at 6 layers, {deep:.2f} at 12"


# ---------------------------------------------------------------------------------- RES-3
@claim("RES-3")
@pytest.mark.parametrize("fan_in, fan_out", [(256, 256), (64, 256), (512, 128)])
def test_xavier_weights_have_the_glorot_variance(fan_in, fan_out):
    """reference/init.py: Var(W) = 2 / (fan_in + fan_out), uniform on ±sqrt(6 / (fan_in + fan_out)) or normal."""
    rng = np.random.default_rng(fan_in + fan_out)
    target = 2.0 / (fan_in + fan_out)
    u, n = init.xavier_uniform(rng, fan_in, fan_out), init.xavier_normal(rng, fan_in, fan_out)
    assert u.shape == n.shape == (fan_in, fan_out)
    assert np.abs(u).max() <= np.sqrt(6.0 / (fan_in + fan_out))
    for w in (u, n):
        assert abs(w.var() / target - 1.0) < 0.05, (w.var(), target)


def _projection_chain(impl, x, weights_of_layer, H, layers):
    """Push x (B, 1, D) through `layers` calls of multi_head_attention with one key: each call is then
    exactly two projections, (x W_V + b_V) W_O + b_O (the one key has weight 1). Variance after each call."""
    variances = [float(x.var())]
    attention = carried.own_or_reference(impl, "multi_head_attention")  # a bug of its own is charged to MHA-5
    for layer in range(layers):
        w = weights_of_layer(layer)
        x = attention(x, x, x, w, H)  # (B, 1, D)
        variances.append(float(x.var()))
    return np.array(variances)


@claim("RES-3")
@pytest.mark.parametrize("seed, H", [(0, 1), (1, 4)])
def test_xavier_keeps_activation_variance_through_the_projections(impl, seed, H):
    """Through 6 calls (12 projections D x D, D = 64) of the implementation's multi_head_attention, Xavier
    weights keep the activations' variance within a factor 2 of where it started; unit-variance weights
    multiply it by about D at every projection."""
    D, B, layers = 64, 256, 6
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, 1, D))

    def xavier(layer):
        r = np.random.default_rng(seed + 100 + layer)
        return {n: init.xavier_uniform(r, D, D) for n in ("w_q", "w_k", "w_v", "w_o")}

    def unit(layer):
        r = np.random.default_rng(seed + 100 + layer)
        return {n: r.standard_normal((D, D)) for n in ("w_q", "w_k", "w_v", "w_o")}

    kept = _projection_chain(impl, x, xavier, H, layers)
    ratios = kept[1:] / kept[:-1]
    check.holds(impl, bool(np.all((ratios > 0.6) & (ratios < 1.6)) and 0.5 < kept[-1] / kept[0] < 2.0),
                "Xavier weights keep the variance of activations roughly constant through the projections",
                [f"variance after each of {layers} calls: {np.round(kept, 3).tolist()}",
                 "expected each call's ratio within (0.6, 1.6) and the overall ratio within (0.5, 2)"], [x])
    grown = _projection_chain(impl, x, unit, H, 1)
    check.holds(impl, grown[1] / grown[0] > D, "unit-variance weights, by contrast, multiply the variance by ~D "
                "per projection (D^2 per call)", [f"variance {grown[0]:.3g} -> {grown[1]:.3g} after one call"], [x])
