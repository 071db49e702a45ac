"""A paged KV cache read as one padded contiguous cache and a mask, for the implementations that have
an attention with `mask=` already (NumPy or torch arrays alike).

    k_cache[block_table]          (B, M, H_kv, S, d)   every table entry's block, in table order
    -> (B, H_kv, M·S, d)          slot t of row b is token t of sequence b
    visible: t < seq_lens[b]  AND (causal) t <= i + seq_lens[b] - L_q        (B, 1, L_q, M·S)

One gather for the whole batch instead of a loop over sequences; the slots past seq_lens[b] (the tail
of the last block, the table's unused entries) are read but hidden, so they get weight exactly 0.
The shapes and indices are checked by the reference's own check (ValueError naming them).
"""

from reference.checks import check_paged


def as_contiguous(q, k_cache, v_cache, block_table, seq_lens, is_causal):
    """(k, v, mask): k (B, H, M·S, d_k), v (B, H, M·S, d_v) with K/V heads repeated to q's H, mask (B, 1, L_q, M·S)."""
    is_torch = type(q).__module__.startswith("torch")
    as_numpy = (lambda x: x.detach().cpu().numpy()) if is_torch else (lambda x: x)
    check_paged(q, k_cache, v_cache, as_numpy(block_table), as_numpy(seq_lens))  # shapes of q and the caches only
    B, H, L_q = q.shape[:3]
    N, H_kv, S = k_cache.shape[:3]
    M = block_table.shape[1]

    def contiguous(cache):  # (N, H_kv, S, d) -> (B, H, M·S, d)
        blocks = cache[block_table]  # (B, M, H_kv, S, d)
        flat = (blocks.permute(0, 2, 1, 3, 4) if is_torch else blocks.transpose(0, 2, 1, 3, 4)).reshape(
            B, H_kv, M * S, cache.shape[-1])
        if H == H_kv:
            return flat
        return flat.repeat_interleave(H // H_kv, dim=1) if is_torch else flat.repeat(H // H_kv, axis=1)

    if is_torch:
        import torch

        t, i = torch.arange(M * S, device=q.device), torch.arange(L_q, device=q.device)
    else:
        import numpy as np

        t, i = np.arange(M * S), np.arange(L_q)
    n = seq_lens[:, None, None]  # (B, 1, 1)
    mask = t[None, None, :] < n  # (B, 1, M·S): the tokens sequence b has
    if is_causal:
        mask = mask & (t[None, None, :] <= i[None, :, None] + n - L_q)  # (B, L_q, M·S): bottom-right, per sequence
    else:
        mask = mask & (i[None, :, None] >= 0)  # (B, L_q, M·S)
    return contiguous(k_cache), contiguous(v_cache), mask[:, None]  # mask (B, 1, L_q, M·S)
