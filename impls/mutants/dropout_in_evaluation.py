"""Dropout left on in evaluation: multi_head_attention drops weights whatever `training` says.

Caught by DROP-3: with training=False there is no dropout at all, whatever dropout_p is. This is
the commonest dropout bug in users' code (a model never switched to eval mode, or F.dropout called
without training=self.training): evaluation outputs are then random.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403
from impls.mutants._base import _check_mha, _head_keywords, _kv_head_of, _project

BUG = ("applying dropout in multi_head_attention whatever `training` says, so evaluation (training=False) still "
       "drops attention weights")
CAUGHT_BY = "DROP-3"


def multi_head_attention(query, key, value, weights, num_heads, mask=None, is_causal=False, num_kv_heads=None,
                         window_size=None, q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None,
                         dropout_p=0.0, training=False, generator=None):
    query, key, value = np.asarray(query), np.asarray(key), np.asarray(value)
    G = _check_mha(query, key, value, weights, num_heads, num_kv_heads)
    q = split_heads(_project(query, weights, "q"), num_heads)
    share = _kv_head_of(num_heads, G)
    k = split_heads(_project(key, weights, "k"), G)[..., share, :, :]
    v = split_heads(_project(value, weights, "v"), G)[..., share, :, :]
    later = _head_keywords(window_size, q_segment_ids, kv_segment_ids, softcap, sinks)
    later.update(dropout_p=dropout_p, generator=generator)   # BUG: `training` is never looked at
    heads = scaled_dot_product_attention(q, k, v, mask=mask, is_causal=is_causal, **later)
    return _project(merge_heads(heads), weights, "o")


_base.rewire(globals())
