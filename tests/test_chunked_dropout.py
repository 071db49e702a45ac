"""The chunked implementations' dropout: one pattern per generator state, whatever the tiling.

The spec's dropout chapter (DROP-1..3) calls each implementation at its default block sizes. A chunked
kernel that drew its pattern tile by tile from a streaming generator would pass there and drop other
weights at other block sizes; numpy_chunked and torch_chunked compute each weight's draw from its
position (impls/_counter_dropout.py). Here the dropped weights must be the same for every block size
(and for torch_chunked on both its schedules and under autograd), the output must be P' V with those
weights, and the counter's draws must be uniform enough to give the drop fraction.
"""

import numpy as np
import pytest

from impls import numpy_chunked
from impls._counter_dropout import keep_factors

BLOCKS = [(1, 1), (5, 7), (37, 3), (None, None)]  # None: the defaults, one block holds everything here


def _qkv(seed, lead=(2, 3), L_q=37, L_k=29, d=8, d_v=5):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((*lead, L_q, d)), rng.standard_normal((*lead, L_k, d)),
            rng.standard_normal((*lead, L_k, d_v)))


def test_a_tile_of_draws_is_the_same_cut_from_the_whole():
    whole = keep_factors(99, 0.3, 16, 12, (0, 4), (0, 16), (0, 12))  # (4, 16, 12)
    tile = keep_factors(99, 0.3, 16, 12, (1, 3), (5, 11), (7, 12))
    assert np.array_equal(tile, whole[1:3, 5:11, 7:12])
    assert set(np.unique(whole)) == {0.0, 1 / 0.7}


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_the_counter_drops_a_fraction_p(p):
    factors = keep_factors(12345, p, 64, 64, (0, 16), (0, 64), (0, 64))  # 65536 draws
    n = factors.size
    assert abs(float((factors == 0).mean()) - p) <= 6 * np.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("causal", [False, True])
def test_numpy_chunked_drops_the_same_weights_for_every_block_size(causal):
    q, k, v = _qkv(1)
    weights = [numpy_chunked.attention_weights(q, k, is_causal=causal, dropout_p=0.4, block_q=bq, block_k=bk,
                                               generator=np.random.default_rng(7)) for bq, bk in BLOCKS]
    for w in weights[1:]:
        assert np.array_equal(w == 0, weights[0] == 0)
        np.testing.assert_allclose(w, weights[0], rtol=0, atol=1e-14)
    for bq, bk in BLOCKS:
        out = numpy_chunked.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=0.4, block_q=bq,
                                                         block_k=bk, generator=np.random.default_rng(7))
        np.testing.assert_allclose(out, weights[0] @ v, rtol=0, atol=1e-13)


@pytest.mark.parametrize("causal", [False, True])
def test_torch_chunked_drops_the_same_weights_for_every_block_size_and_path(causal):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    from impls import torch_chunked

    q, k, v = (torch.from_numpy(a) for a in _qkv(2))

    def seeded():
        return torch.Generator().manual_seed(7)

    weights = [torch_chunked.attention_weights(q, k, is_causal=causal, dropout_p=0.4, block_q=bq, block_k=bk,
                                               generator=seeded()) for bq, bk in BLOCKS]
    for w in weights[1:]:
        assert torch.equal(w == 0, weights[0] == 0)
        torch.testing.assert_close(w, weights[0], rtol=0, atol=1e-14)
    expected = weights[0] @ v
    for bq, bk in BLOCKS:
        for fast in (False, True):
            out = torch_chunked.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=0.4, block_q=bq,
                                                             block_k=bk, fast=fast, generator=seeded())
            torch.testing.assert_close(out, expected, rtol=0, atol=1e-13)
    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))  # under autograd: the out-of-place arithmetic
    out = torch_chunked.scaled_dot_product_attention(qg, kg, vg, is_causal=causal, dropout_p=0.4, block_q=5,
                                                     block_k=7, generator=seeded())
    torch.testing.assert_close(out.detach(), expected, rtol=0, atol=1e-13)
    w = torch_chunked.attention_weights(qg, kg, is_causal=causal, dropout_p=0.4, block_q=5, block_k=7,
                                        generator=seeded())
    assert torch.equal(w.detach() == 0, weights[0] == 0)
