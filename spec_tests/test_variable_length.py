"""Chapter: variable length (docs/variable_length.md). Claims VAR-1 .. VAR-4.

Attention has no parameter that depends on the sequence length (lecture note 1 §6: A1, A2 -> B1, B2 and
A1..A4 -> B1..B4 with the same weights). Padding and masks make batches of different lengths;
causal masks make prefixes independent of what follows; and without positional encodings,
self-attention cannot see order at all (lecture note 1 §2 feeds it X "with positional encoding").
"""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import reference
from spec_tests.harness import carried, check, tolerance
from spec_tests.harness.strategies import SEEDS, mha_weights, normal

claim = pytest.mark.claim
MHA = "multi_head_attention"
SDPA = "scaled_dot_product_attention"
D, H = 12, 3


# ---------------------------------------------------------------------------------- VAR-1
@claim("VAR-1")
@pytest.mark.parametrize("L", [1, 2, 4, 7, 64, 113])
def test_the_same_weights_process_any_length(impl, L):
    """One set of weights, any L: the output is (B, L, D) and equals the reference."""
    w = mha_weights(5, D, True)
    x = normal(L, (2, L, D))
    out = check.oracle(impl, MHA, x, x, x, w, H)
    check.shape(impl, out, (2, L, D), f"output length equals input length {L}")


@claim("VAR-1")
@given(seed=SEEDS, lengths=st.lists(st.integers(1, 20), min_size=2, max_size=4))
def test_nothing_depends_on_an_earlier_call(impl, seed, lengths):
    """Calls of other lengths in between do not change the result for a given input."""
    w = mha_weights(seed, D, True)
    x = normal(seed, (1, lengths[0], D))
    first = impl.multi_head_attention(x, x, x, w, H, is_causal=True)
    for n, L in enumerate(lengths[1:]):
        y = normal(seed + n + 1, (1, L, D))
        impl.multi_head_attention(y, y, y, w, H, is_causal=True)
    again = impl.multi_head_attention(x, x, x, w, H, is_causal=True)
    check.equal(impl, again, first, f"the result for length {lengths[0]} is the same after calls of lengths {lengths[1:]}")


# ---------------------------------------------------------------------------------- VAR-2
@claim("VAR-2")
@given(seed=SEEDS, L=st.integers(2, 12), n=st.integers(1, 11), bias=st.booleans())
def test_causal_prefix_equals_the_prefix_alone(impl, seed, L, n, bias):
    """Under is_causal, outputs for the first n tokens equal the outputs for those n tokens alone."""
    n = min(n, L - 1)
    w = mha_weights(seed, D, bias)
    x = normal(seed, (2, L, D))
    if carried.masking_charged(impl):  # its causal masking fails the masks chapter, charged there: the reference
        check.oracle(impl, MHA, x, x, x, w, H, is_causal=True)  # built on its attention judges the causal call
        return
    full = impl.multi_head_attention(x, x, x, w, H, is_causal=True)
    prefix = impl.multi_head_attention(x[:, :n], x[:, :n], x[:, :n], w, H, is_causal=True)
    check.close(impl, full[:, :n], prefix, f"causal outputs 0..{n - 1} of a length-{L} sequence equal those of its "
                f"first {n} tokens alone", size=tolerance.multi_head_size(x, x, x, w, H))


# ---------------------------------------------------------------------------------- VAR-3
@claim("VAR-3")
@given(seed=SEEDS, lengths=st.lists(st.integers(1, 9), min_size=1, max_size=4), causal=st.booleans(),
       extra=st.integers(0, 3))
@example(seed=5, lengths=[2, 5, 4], causal=False, extra=0)  # the longest sequence fills the padded length
@example(seed=6, lengths=[6, 3], causal=True, extra=0)
def test_padded_batch_equals_each_sequence_alone(impl, seed, lengths, causal, extra):
    """A batch padded to a common length with a padding mask gives, at real positions, each sequence's own result."""
    L = max(lengths) + extra
    w = mha_weights(seed, D, True)
    seqs = [normal(seed + 1 + b, (n, D)) for b, n in enumerate(lengths)]
    carry = carried.failing_own_claims(impl, SDPA) or carried.masking_charged(impl, MHA, alone=True)  # its masking
    # (of attention, or of multi-head attention on a padding mask) fails the masks chapter's claims, charged there:
    # the reference built on it judges the padded batch, whose pads then hold plain noise (large garbage let through
    # is the masks chapter's; in float32 it would also swamp the comparison with the composition)
    batch = (1.0 if carry else 100.0) * normal(seed, (len(lengths), L, D))  # pad positions hold large garbage
    for b, s in enumerate(seqs):
        batch[b, : len(s)] = s
    mask = reference.padding_mask(lengths, L)  # (B, 1, 1, L)
    if carry:
        check.oracle(impl, MHA, batch, batch, batch, w, H, mask=mask, is_causal=causal)
        return
    out = impl.multi_head_attention(batch, batch, batch, w, H, mask=mask, is_causal=causal)
    for b, s in enumerate(seqs):
        alone = impl.multi_head_attention(s[None], s[None], s[None], w, H, is_causal=causal)
        check.close(impl, out[b, : len(s)], alone[0], f"sequence {b} (length {len(s)}) padded to {L} equals "
                    "the sequence alone at its real positions", size=tolerance.multi_head_size(batch, batch, batch, w, H))


# ---------------------------------------------------------------------------------- VAR-4
@claim("VAR-4")
@given(seed=SEEDS, L=st.integers(2, 12), perm_seed=SEEDS, bias=st.booleans())
def test_self_attention_is_permutation_equivariant(impl, seed, L, perm_seed, bias):
    """Without positions, permuting the tokens permutes the outputs the same way: MHA(x[perm]) == MHA(x)[perm]."""
    perm = np.random.default_rng(perm_seed).permutation(L)
    w = mha_weights(seed, D, bias)
    x = normal(seed, (2, L, D))
    out = impl.multi_head_attention(x, x, x, w, H)
    xp = x[:, perm]
    out_perm = impl.multi_head_attention(xp, xp, xp, w, H)
    check.close(impl, out_perm, out[:, perm], f"permuting the tokens by {perm.tolist()} permutes the outputs",
                size=tolerance.multi_head_size(x, x, x, w, H))


@claim("VAR-4")
@given(seed=SEEDS, L=st.integers(3, 12))
def test_positional_encoding_breaks_the_symmetry(impl, seed, L):
    """With the sinusoidal encoding added, swapping two tokens no longer just swaps their outputs."""
    w = mha_weights(seed, D, True)
    x = normal(seed, (1, L, D))
    pe = reference.sinusoidal_positional_encoding(L, D)
    perm = np.arange(L)
    perm[[0, L - 1]] = perm[[L - 1, 0]]
    out = impl.multi_head_attention(x + pe, x + pe, x + pe, w, H)
    xp = x[:, perm] + pe
    out_perm = impl.multi_head_attention(xp, xp, xp, w, H)
    gap = float(np.abs(out_perm - out[:, perm]).max())
    check.holds(impl, gap > 1e-3 * (tolerance.magnitude(out) + 1.0),
                "with positions added, reordering the tokens changes more than the order of the outputs",
                [f"largest change after undoing the permutation: {gap:.3g}"], [out, out_perm])
