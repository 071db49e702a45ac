"""ALiBi: attention with linear biases (Press et al. 2022), a relative position bias with no parameters.

    bias[h, i, j] = -s_h · (i - j)         for the keys j <= i a causal query sees
    s_h = 2^(-8 (h + 1) / H),  h = 0 .. H-1    a geometric sequence of slopes, one per head

    H a power of two: 1/2, 1/4, ..., 1/256 for H = 8. Otherwise, with n the largest power of two
    below H: the n slopes for n heads, then every other slope of the 2n-head sequence, H - n of them.

Like T5's bias (`reference.t5_bias`) it depends on j - i only, and it is added to the
scores: softmax(Q K^T / sqrt(d_k) + bias). Since softmax ignores a constant added to a
whole row, the bias s_h · j (what BLOOM adds) gives the same attention as -s_h · (i - j).
Nothing is added to the embeddings, so there is no table to run out of: lengths beyond
those seen in training extrapolate.
"""

import math

import numpy as np

from reference.t5_bias import relative_positions


# --8<-- [start:alibi]
def alibi_slopes(num_heads: int) -> np.ndarray:
    """s_h = 2^(-8 (h+1) / H) for H a power of two; otherwise interleaved from the 2n-head sequence; (H,)."""
    def geometric(n):  # n a power of two: 2^(-8/n), 2^(-16/n), ..., 2^(-8)
        return 2.0 ** (-8.0 * np.arange(1, n + 1) / n)

    n = 2 ** math.floor(math.log2(num_heads))
    if n == num_heads:
        return geometric(n)
    return np.concatenate([geometric(n), geometric(2 * n)[0::2][: num_heads - n]])


def alibi_bias(num_heads: int, L_q: int, L_k: int) -> np.ndarray:
    """bias[h, i, j] = s_h · (j - i), with the queries as the last L_q positions; (H, L_q, L_k), for bias=.

    Negative for keys in the past; positive for future keys, which a causal mask hides.
    """
    slopes = alibi_slopes(num_heads)[:, None, None]  # (H, 1, 1)
    return slopes * relative_positions(L_q, L_k)  # (H, L_q, L_k)
# --8<-- [end:alibi]
