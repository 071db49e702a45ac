"""Attention does not check that k and v have the same length; it silently cuts the longer one.

Caught by ERR-1: k and v of different lengths must raise ValueError naming both lengths;
nothing may be computed from them silently.
"""
from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "not checking that k and v have the same length, and silently truncating both to the shorter one"
CAUGHT_BY = "ERR-1"


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, return_lse=False,
                                 dropout_p=0.0, generator=None):
    n = min(k.shape[-2], v.shape[-2])   # BUG: no ValueError
    return _base.scaled_dot_product_attention(q, k[..., :n, :], v[..., :n, :], mask, is_causal, scale,
                                              None if bias is None else np.asarray(bias)[..., :n],
        window_size, q_segment_ids, kv_segment_ids, softcap, sinks, return_lse, dropout_p, generator)


_base.rewire(globals())
