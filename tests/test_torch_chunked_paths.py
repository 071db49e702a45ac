"""torch_chunked's two schedules, the plain path and the thread-pool fast path, give the same attention.

The spec's tests run at small sizes, where torch_chunked takes the plain path (`fast=None`
chooses by N L_q L_k); large problems take the fast path. Both call the same per-block online
softmax, but the fast path slices heads, buffers and masks differently, so here each case runs
both ways (`fast=False`, `fast=True`) and each result is compared with the float64 reference,
and the two with each other, on the cases where slicing goes wrong first: masks of every
broadcast shape, bottom-right causal with L_q != L_k (dead rows), block sizes that do not
divide L, low-precision inputs, and one size large enough that `fast=None` takes the fast path.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")

from impls import torch_chunked  # noqa: E402
from reference import attention as ref  # noqa: E402

# (lead, L_q, L_k, d, mask shape or None, is_causal, block_q, block_k)
CASES = [
    ((2, 3), 37, 37, 8, None, False, 8, 16),
    ((2, 3), 37, 37, 8, None, True, 8, 16),
    ((2, 2), 11, 29, 16, None, True, 4, 7),  # L_q < L_k
    ((1, 2), 29, 11, 16, None, True, 5, 3),  # L_q > L_k: the first 18 queries see no key
    ((2, 2), 19, 23, 8, (2, 1, 1, 23), False, 6, 5),  # a padding mask, broadcast over heads and queries
    ((2, 2), 19, 23, 8, (19, 23), True, 6, 5),  # one mask for every head, and causal
    ((2, 2), 19, 23, 8, (2, 2, 19, 23), False, 64, 64),  # a mask per head; one block holds everything
]


def _case(lead, L_q, L_k, d, mask_shape, seed):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((*lead, n, d)) for n in (L_q, L_k, L_k))
    mask = None
    if mask_shape is not None:
        mask = rng.random(mask_shape) < 0.7
        mask[..., 0, :] = False  # a row with no visible key: must output exactly 0
    return q, k, v, mask


@pytest.mark.parametrize("lead, L_q, L_k, d, mask_shape, is_causal, block_q, block_k", CASES,
                         ids=[f"{lq}x{lk}-{'mask' + 'x'.join(map(str, m)) if m else 'nomask'}{'-causal' if c else ''}"
                              f"-b{bq}x{bk}" for _, lq, lk, _, m, c, bq, bk in CASES])
@pytest.mark.parametrize("dtype, tol", [("float64", 1e-12), ("float32", 2e-6), ("bfloat16", 2e-2)])
def test_fast_and_plain_paths_agree(lead, L_q, L_k, d, mask_shape, is_causal, block_q, block_k, dtype, tol):
    q, k, v, mask = _case(lead, L_q, L_k, d, mask_shape, seed=L_q * L_k + d)
    expected = ref.scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
    tq, tk, tv = (torch.tensor(x, dtype=getattr(torch, dtype)) for x in (q, k, v))
    tmask = None if mask is None else torch.tensor(mask)
    outs = {}
    for fast in (False, True):
        out = torch_chunked.scaled_dot_product_attention(tq, tk, tv, mask=tmask, is_causal=is_causal,
                                                         block_q=block_q, block_k=block_k, fast=fast)
        assert out.dtype == tq.dtype and out.shape == expected.shape
        outs[fast] = out.double().numpy()
        err = np.abs(outs[fast] - expected).max()
        assert err <= tol, f"fast={fast}: largest error against the reference {err:.3e} > {tol:.1e}"
    dead = (expected == 0).all(axis=-1)  # rows with no visible key
    for fast, out in outs.items():
        assert (out[dead] == 0).all(), f"fast={fast}: a row with no visible key is not exactly 0"
    gap = np.abs(outs[True] - outs[False]).max()
    assert gap <= tol, f"the fast and plain paths differ by {gap:.3e} (> {tol:.1e})"


def test_default_takes_the_fast_path_for_large_problems_and_agrees(monkeypatch):
    """fast=None: below FAST_MIN_SCORES the plain path runs; at or above it, the fast path, with the same result."""
    calls = []
    real = torch_chunked._attend_parallel
    monkeypatch.setattr(torch_chunked, "_attend_parallel", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    L = 64
    monkeypatch.setattr(torch_chunked, "FAST_MIN_SCORES", 2 * L * L)  # N = 2 heads of L x L: exactly the threshold
    q, k, v, _ = _case((1, 2), L, L, 16, None, seed=7)
    tq, tk, tv = (torch.tensor(x, dtype=torch.float32) for x in (q, k, v))
    small = torch_chunked.scaled_dot_product_attention(tq[:, :1], tk[:, :1], tv[:, :1], is_causal=True)
    assert calls == [], "a problem below FAST_MIN_SCORES took the fast path"
    large = torch_chunked.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    assert calls == [1], "a problem at FAST_MIN_SCORES did not take the fast path"
    plain = torch_chunked.scaled_dot_product_attention(tq, tk, tv, is_causal=True, fast=False)
    np.testing.assert_allclose(large.numpy(), plain.numpy(), rtol=0, atol=2e-6)
    np.testing.assert_allclose(small.numpy(), plain[:, :1].numpy(), rtol=0, atol=2e-6)
    expected = ref.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert np.abs(large.double().numpy() - expected).max() <= 2e-6


def test_fast_path_leaves_the_thread_setting_as_it_was():
    """The workers run PyTorch with one thread; the caller's setting is restored afterwards."""
    before = torch.get_num_threads()
    q = torch.randn(1, 2, 40, 8)
    torch_chunked.scaled_dot_product_attention(q, q, q, block_q=8, fast=True)
    assert torch.get_num_threads() == before


def test_autograd_takes_the_plain_path_and_gets_gradients():
    """Under autograd fast=True is ignored: the out-of-place plain path runs and the gradients are the plain path's."""
    q = torch.randn(1, 2, 24, 8, dtype=torch.float64, requires_grad=True)
    out = torch_chunked.scaled_dot_product_attention(q, q, q, block_q=5, block_k=7, is_causal=True, fast=True)
    out.sum().backward()
    g_fast = q.grad.clone()
    q.grad = None
    torch_chunked.scaled_dot_product_attention(q, q, q, block_q=5, block_k=7, is_causal=True, fast=False).sum().backward()
    assert torch.equal(g_fast, q.grad)
