"""Sinusoidal positional encoding (lecture note 2 §5.2; Vaswani et al. 2017, §3.5).

    PE[p, 2i]   = sin(p / 10000^(2i / D))
    PE[p, 2i+1] = cos(p / 10000^(2i / D))

    p ∈ {0, ..., length - 1} a position, i ∈ {0, ..., ceil(D/2) - 1} a frequency index,
    D = d_model; sin and cos interleave (even columns sin, odd columns cos).

Each pair of columns (2i, 2i+1) is a point on a circle turning at angular
frequency ω_i = 10000^(-2i/D), so PE[p + k] is PE[p] rotated by k·ω_i in every
pair: a fixed linear map, the same for every p (claim PE-3).
"""

import numpy as np


# --8<-- [start:sinusoidal_positional_encoding]
def sinusoidal_positional_encoding(length: int, d_model: int):
    """PE[p, 2i] = sin(p ω_i), PE[p, 2i+1] = cos(p ω_i), ω_i = 10000^(-2i/D); (length, D) float64."""
    p = np.arange(length, dtype=np.float64)[:, None]  # (length, 1)
    two_i = np.arange(0, d_model, 2, dtype=np.float64)[None, :]  # (1, ceil(D/2)): the exponent's 2i
    angle = p / 10000.0 ** (two_i / d_model)  # (length, ceil(D/2))
    pe = np.zeros((length, d_model))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])  # odd D: the last column is a sin
    return pe
# --8<-- [end:sinusoidal_positional_encoding]
