"""Attention multiplies its output by (1 + 1e-12 * random noise), so repeated calls differ.

Caught by ERR-2: repeated calls with the same inputs must give identical results; the noise
is far below the float64 tolerance (about 1e-10), so only the repeat-and-compare-exactly
test sees it.
"""
import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = ("a nondeterministic result: unseeded random noise of 1e-12 relative on the output "
       "(as an unordered parallel reduction would give), so two identical calls differ")
CAUGHT_BY = "ERR-2"
ALSO_CAUGHT_BY = ("VAR-1",)   # two calls on the same input differ


def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None, bias=None, window_size=None,
                                 q_segment_ids=None, kv_segment_ids=None, softcap=None, sinks=None, return_lse=False,
                                 dropout_p=0.0, generator=None):
    result = _base.scaled_dot_product_attention(q, k, v, mask, is_causal, scale, bias,
        window_size, q_segment_ids, kv_segment_ids, softcap, sinks, return_lse, dropout_p, generator)
    out = result[0] if return_lse else result
    noise = np.random.default_rng().standard_normal(out.shape)   # BUG: unseeded noise
    out = (out * (1 + 1e-12 * noise)).astype(out.dtype)
    return (out, result[1]) if return_lse else out


_base.rewire(globals())
