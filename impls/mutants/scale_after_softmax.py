"""The 1/sqrt(d_k) scale is applied to the weights after the softmax, not to the scores before it.

`p = softmax(q @ k.T) * scale`: an outsider's reading of "scaled dot-product" that scales the wrong thing.
The weights no longer sum to 1 (they sum to 1/sqrt(d_k)) and are as peaked as unscaled scores make them.
Caught by SDPA-1 (the formula, against the reference) and SDPA-2 (weights sum to 1).
"""
import functools
import inspect

import numpy as np

from impls.mutants import _base
from impls.mutants._base import *  # noqa: F401,F403

BUG = "multiplying the softmax's weights by 1/sqrt(d_k) instead of dividing the scores by sqrt(d_k) before it"
CAUGHT_BY = "SDPA-1"
ALSO_CAUGHT_BY = ("SDPA-2",)
_SIGNATURE = inspect.signature(_base.attention_weights)


@functools.wraps(_base.attention_weights)
def attention_weights(*args, **kwargs):
    call = _SIGNATURE.bind(*args, **kwargs)
    call.apply_defaults()
    q, scale = np.asarray(call.arguments["q"]), call.arguments["scale"]
    scale = 1.0 / float(np.sqrt(q.shape[-1])) if scale is None else float(scale)
    call.arguments["scale"] = 1.0  # the scores go into the softmax unscaled ...
    return _base.attention_weights(*call.args, **call.kwargs) * scale  # BUG: ... and the weights are scaled


_base.rewire(globals())
