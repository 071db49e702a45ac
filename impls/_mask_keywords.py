"""The mask algebra's keywords as one boolean mask, for the implementations that take a `mask=` already.

    window_size=(left, right):  -left <= j - (i + L_k - L_q) <= right     (bottom-right, like causal)
    q_segment_ids, kv_segment_ids:  q_segment_ids[i] == kv_segment_ids[j]  (packed documents)

`extra_mask` returns the AND of the two (None when neither is given), in the array kind of `like`
(a NumPy array or a torch tensor); the caller ANDs it with its own mask and causal rule. The
values are checked by the reference's own checks (ValueError naming them).
"""

from reference.mask_algebra import check_window_size, segment_ids


def _window(arange, L_q, L_k, window_size):
    left, right = check_window_size(window_size)
    centre = arange(L_q)[:, None] + (L_k - L_q)  # (L_q, 1): each query's position among the keys
    j = arange(L_k)[None, :]  # (1, L_k)
    ok = None
    if left is not None:
        ok = j >= centre - left
    if right is not None:
        ok = (j <= centre + right) if ok is None else ok & (j <= centre + right)
    return ok  # (L_q, L_k), or None for (None, None)


def extra_mask(like, L_q, L_k, window_size=None, q_segment_ids=None, kv_segment_ids=None):
    """window AND documents, broadcastable to (..., L_q, L_k) bool, as `like`'s kind of array; or None."""
    is_torch = type(like).__module__.startswith("torch")
    if is_torch:
        import torch

        def arange(n):
            return torch.arange(n, device=like.device)
    else:
        import numpy as np

        arange = np.arange
    ok = None if window_size is None else _window(arange, L_q, L_k, window_size)
    if q_segment_ids is not None or kv_segment_ids is not None:
        q_seg = q_segment_ids if q_segment_ids is not None else kv_segment_ids
        kv_seg = kv_segment_ids if kv_segment_ids is not None else q_segment_ids
        as_numpy = (lambda x: x.detach().cpu().numpy()) if is_torch else (lambda x: x)
        segment_ids(as_numpy(q_seg), as_numpy(kv_seg), L_q, L_k)  # checks shapes and integer dtype
        same = q_seg[..., :, None] == kv_seg[..., None, :]  # (..., L_q, L_k)
        ok = same if ok is None else ok & same
    return ok


def and_masks(a, b):
    """a AND b, where None means "everything visible"."""
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def values_no_query_sees_zeroed(v, mask, is_causal, L_q, L_k):
    """v (..., L_k, d_v) with the value of every key that no query of its slice may see set to 0.

        V'[j] = 0  where  not any_i (mask AND causal)[i, j]        (padding, a hidden column)

    A weight of exactly 0 does not remove a NaN or inf value: 0 · NaN = NaN inside P V (or a tile's
    P_b V_b). Zeroing such values first keeps what sits at hidden positions out of every output
    (CONTRACT.md, "Poison at hidden positions"). `mask` None: every key is seen, v is returned as is.
    """
    if mask is None:
        return v
    is_torch = type(v).__module__.startswith("torch")
    if is_torch:
        import torch as xp

        arange = (lambda n: xp.arange(n, device=v.device))
    else:
        import numpy as xp

        arange = xp.arange
    visible = mask if len(mask.shape) >= 2 else mask[None, :]  # (..., L_q or 1, L_k)
    if is_causal:
        visible = visible & (arange(L_k)[None, :] <= arange(L_q)[:, None] + (L_k - L_q))  # bottom-right
    unseen = ~visible.any(-2)[..., None]  # (..., L_k, 1): no query of the slice sees key j
    return xp.where(unseen, xp.zeros((), dtype=v.dtype) if is_torch else v.dtype.type(0), v)
