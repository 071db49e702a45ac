"""PyTorch's `F.scaled_dot_product_attention` restricted to its math backend
(`torch.nn.attention.sdpa_kernel(SDPBackend.MATH)`): the reference composition of PyTorch's own ops.

The same conversions as adapters/pytorch_sdpa.py (this module reuses them), with only the backend fixed.
"""

from torch.nn.attention import SDPBackend

from adapters import pytorch_sdpa as _sdpa

BACKEND = "torch"
DTYPES = _sdpa.DTYPES
CONTRACT = _sdpa.CONTRACT


def _math(fn):
    def run(*args, **kwargs):
        old, _sdpa.BACKENDS = _sdpa.BACKENDS, [SDPBackend.MATH]
        try:
            return fn(*args, **kwargs)
        finally:
            _sdpa.BACKENDS = old

    run.__name__, run.__doc__, run.__wrapped__ = fn.__name__, fn.__doc__, fn
    return run


scaled_dot_product_attention = _math(_sdpa.scaled_dot_product_attention)
attention_weights = _math(_sdpa.attention_weights)
multi_head_attention = _math(_sdpa.multi_head_attention)
