"""LayerNorm computes its mean and variance as matrix products, x @ (1/D, ..., 1/D).

Caught by PREC-2: in float32 the products are as accurate as `mean()`, but under
torch.autocast a matmul runs in float16/bfloat16, so the statistics of a row of mean 300
lose about 3 digits and the normalised output is wrong in its first digit, while the
result still comes back as float32. Lecture note 2 §4.2: "LayerNorm must stay in FP32".
Built on impls/torch_naive (correct), not on the NumPy `_base`: the bug needs autocast.
"""
import torch

from impls.torch_naive import *  # noqa: F401,F403
from impls.torch_naive import check_layer_norm

DTYPES = ("float32",)
BUG = ("computing LayerNorm's mean and variance with a matmul against a vector of 1/D, which "
       "torch.autocast runs in float16/bfloat16")
CAUGHT_BY = "PREC-2"


def layer_norm(x, gamma, beta, eps=1e-5):
    check_layer_norm(x, gamma, beta)
    D = x.shape[-1]
    avg = torch.full((D, 1), 1.0 / D, dtype=x.dtype, device=x.device)  # (D, 1)
    mean = x @ avg  # (..., 1)  BUG: a matmul, which autocast lowers
    centred = x - mean
    var = (centred * centred) @ avg  # (..., 1)  BUG: likewise
    return (gamma * (centred / torch.sqrt(var + float(eps))) + beta).float()
