"""Grouped-query attention that groups the query heads one way and the mask's heads another.

A grouped kernel computes the H query heads as G groups of H/G, query head h in group h // (H/G), next to
K/V head h // (H/G), and must regroup a per-head mask (B, H, L_q, L_k) the same way. This one reshapes the
mask's head axis as (H/G, G) instead of (G, H/G), so query head h uses the mask of head
(h % (H/G)) * G + h // (H/G): right for the first and last head, for masks without a head axis, and when
G = H, wrong for the heads between whenever G < H. Caught by MHA-9 and MASK-5, which draw a mask per query
head with G < H and MQA.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "with num_kv_heads = G < H, the mask's head axis regrouped as (H/G, G) while the query heads are grouped as (G, H/G)"
CAUGHT_BY = "MHA-9"
ALSO_CAUGHT_BY = ("MASK-5",)


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None):
    query, key, value = np.asarray(query), np.asarray(key), np.asarray(value)
    G = _check_mha(query, key, value, weights, num_heads, num_kv_heads)
    q = split_heads(_project(query, weights, "q"), num_heads)
    share = _kv_head_of(num_heads, G)
    k = split_heads(_project(key, weights, "k"), G)[..., share, :, :]
    v = split_heads(_project(value, weights, "v"), G)[..., share, :, :]
    if mask is not None and G < num_heads and np.ndim(mask) >= 3 and np.shape(mask)[-3] == num_heads:
        per_group = num_heads // G
        wrong = [(h % per_group) * G + h // per_group for h in range(num_heads)]
        mask = np.asarray(mask)[..., wrong, :, :]   # BUG: head h reads the mask of another head of the grid
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal)
    return _project(merge_heads(heads), weights, "o")


_base.rewire(globals())
