"""A float16/bfloat16-only implementation (as a GPU kernel declares) whose sinusoidal encoding uses base 10240.

It answers in float32, computed right but for the base: 10240^(2i/D) instead of 10000^(2i/D), the angles
off by 2.4% x 2i/D. Judged at float16's precision (the most precise dtype it declares), it used to pass:
the allowance modelled angles computed in float16, off by up to eps(float16) x the position, more than the
wrong base moves the encoding. The angles are to be computed in float32 or better, so the wrong base fails
PE-1, the claim of the formula. Built on impls/torch_naive (correct), declaring only the low precisions.
"""
import torch

from impls.torch_naive import *  # noqa: F401,F403

DTYPES = ("float16", "bfloat16")
BUG = "the sinusoidal encoding with base 10240 instead of 10000, from an implementation declaring float16/bfloat16"
CAUGHT_BY = "PE-1"


def sinusoidal_positional_encoding(length, d_model):
    p = torch.arange(length, dtype=torch.float32)[:, None]  # (length, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)  # (ceil(D/2),)
    angle = p / 10240.0 ** (two_i / d_model)  # BUG: 10240, not 10000
    pe = torch.zeros(length, d_model, dtype=torch.float32)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe
