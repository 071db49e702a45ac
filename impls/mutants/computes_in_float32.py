"""Attention casts float64 inputs to float32, computes, and casts the result back to float64.

Caught by PREC-3: a float64 implementation is compared with the float64 reference at about
1e-10 relative; float32 arithmetic is wrong in the 7th or 8th digit. The bug is charged once,
to PREC-3; the other claims judge it at float32 precision (spec_tests/harness/carried.py).
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("casting float64 inputs down to float32 for the computation and back to float64 at "
       "the end, so the dtype looks right but only about 7 digits are correct")
CAUGHT_BY = "PREC-3"


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, return_lse=False,
                                 dropout_p=0.0, generator=None):
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    result = _base.scaled_dot_product_attention(
        q.astype(np.float32), k.astype(np.float32), v.astype(np.float32),   # BUG
        mask, is_causal, scale, None if bias is None else np.asarray(bias).astype(np.float32),
        window_size, q_segment_ids, kv_segment_ids, softcap, sinks, return_lse, dropout_p, generator)
    dtype = np.result_type(q, k, v)
    return (result[0].astype(dtype), result[1].astype(dtype)) if return_lse else result.astype(dtype)


_base.rewire(globals())
