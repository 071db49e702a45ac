"""Multi-head attention flattens batch and heads into one axis, (B * H, L_q, L_k), and lays the mask out
head-major (h * B + b) while the scores are batch-major (b * H + h): a batch's padding mask lands on
another sequence's heads.

Caught by MASK-5: multi_head_attention takes masks broadcastable to (B, H, L_q, L_k), the padding mask
(B, 1, 1, L_k) among them, each sequence's mask applying to its own heads. It is wrong only with B > 1, H > 1
and a mask that differs between sequences or heads. A padded batch (VAR-3) meets it too; that claim judges
the batch on the implementation's own multi-head attention without the mask (error carried forward).
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("flattening (B, H) into one axis and laying the mask out head-major while the scores are batch-major, "
       "so each sequence's padding mask is applied to another sequence's heads")
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
        full = np.broadcast_to(np.asarray(mask), (B, num_heads, L_q, L_k)).reshape(B * num_heads, L_q, L_k)
        mask = full.reshape(num_heads, B, L_q, L_k).transpose(1, 0, 2, 3)   # BUG: read back head-major
    return _base.multi_head_attention(query, key, value, weights, num_heads, mask=mask, is_causal=is_causal,
                                      **later)


_base.rewire(globals())
