"""Multi-head attention flattens batch and heads into one axis, (B * H, L_q, L_k), batch-major (row b * H + h),
and copies a mask shared by the heads with np.tile(mask, (H, 1, 1)) (torch's mask.repeat(H, 1, 1)), whose row
b * H + h is mask[(b * H + h) % B]: np.repeat(mask, H, axis=0) was meant. A batch's padding mask lands on another
sequence's heads.

Caught by MASK-5: multi_head_attention takes masks broadcastable to (B, H, L_q, L_k), the padding mask
(B, 1, 1, L_k) among them, each sequence's mask applying to its own heads. It is wrong only with B > 1, H > 1
and a mask shared by the heads that differs between sequences; a mask with a head axis of size H is right. A
padded batch (VAR-3) meets it too; that claim judges the batch on the implementation's own multi-head attention
without the mask (error carried forward).
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("copying a mask shared by the heads once per head with np.tile (torch's mask.repeat(H, 1, 1)) onto scores "
       "flattened batch-major to (B * H, L_q, L_k), so each sequence's padding mask is applied to another sequence's "
       "heads")
CAUGHT_BY = "MASK-5"


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None,
                         window_size=None, q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None,
                         dropout_p=0.0, training=False, generator=None):
    later = {name: given for name, given in dict(
        num_kv_heads=num_kv_heads, window_size=window_size, q_segment_ids=q_segment_ids,
        kv_segment_ids=kv_segment_ids, softcap=softcap, sinks=sinks, generator=generator).items() if given is not None}
    if dropout_p or training:
        later.update(dropout_p=dropout_p, training=training)
    query = np.asarray(query)
    if mask is not None and query.ndim == 3:
        B, L_q, L_k = query.shape[0], query.shape[1], np.shape(key)[1]
        m = np.asarray(mask)
        if m.ndim < 4 or m.shape[-3] == 1:  # shared by the heads: (B, L_q, L_k) copied once per head
            shared = np.broadcast_to(m, (B, 1, L_q, L_k))[:, 0]
            flat = np.tile(shared, (num_heads, 1, 1))   # BUG: row i is shared[i % B]; np.repeat(.., H, 0) was meant
            mask = flat.reshape(B, num_heads, L_q, L_k)   # read back batch-major, as the scores are
    return _base.multi_head_attention(query, key, value, weights, num_heads, mask=mask, is_causal=is_causal,
                                      **later)


_base.rewire(globals())
