"""A fast path for one key: the softmax of a single score is 1, so the output is v, and the mask is forgotten.

With L_k = 1 every query's one weight is exp(s - s) / exp(s - s) = 1, and some code returns v for each
query without computing a score. That forgets the query whose only key is hidden (a mask of False, or is_causal
with more queries than keys), which must output 0. Right for every L_k > 1, and for L_k = 1 whenever the key
is visible: only a dead row against one key shows the bug. Caught by MASK-4, and by EFF-7's left-padded
batch (a sequence of one token).
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("a fast path for one key (L_k = 1, where the softmax of one score is 1) that returns v for every "
       "query, so a query whose only key is hidden outputs v instead of 0")
CAUGHT_BY = "MASK-4"
ALSO_CAUGHT_BY = ("EFF-7",)  # a left-padded sequence of one token: its padded queries see no key


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, return_lse=False,
                                 dropout_p=0.0, generator=None):
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    plain = all(x is None for x in (bias, window_size, q_segment_ids, kv_segment_ids, softcap, sinks))
    if k.ndim >= 2 and k.shape[-2] == 1 and plain and not return_lse and not dropout_p:
        _check_qk(q, k)
        _check_lengths(k, v)
        if mask is not None:
            _broadcast_mask(mask, _batch_shape(q=q, k=k) + (q.shape[-2], 1))   # checked, then forgotten
        shape = _batch_shape(q=q, k=k, v=v) + (q.shape[-2], v.shape[-1])
        return np.broadcast_to(v, shape).astype(v.dtype)   # BUG: every query weighs its one key 1, hidden or not
    return _base.scaled_dot_product_attention(q, k, v, mask, is_causal, scale, bias, window_size, q_segment_ids,
                                              kv_segment_ids, softcap, sinks, return_lse, dropout_p, generator)


_base.rewire(globals())
