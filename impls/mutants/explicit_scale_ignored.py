"""An explicit `scale` argument is accepted but ignored; 1/sqrt(d_k) is always used.

Caught by SDPA-4: an explicit scale must be honoured, so scale=0.3 must differ from the
default.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "accepting a `scale` argument but never passing it on, so 1/sqrt(d_k) is always used"
CAUGHT_BY = "SDPA-4"


def attention_weights(q, k, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                      q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, dropout_p=0.0, generator=None):
    return _base.attention_weights(q, k, mask, is_causal, bias=bias, window_size=window_size,
                                   q_segment_ids=q_segment_ids, kv_segment_ids=kv_segment_ids, softcap=softcap, sinks=sinks, dropout_p=dropout_p,
                                   generator=generator)  # BUG: `scale` dropped


_base.rewire(globals())
