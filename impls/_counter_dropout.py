"""Dropout for tiled kernels: each weight's draw computed from its position, so no tiling changes the pattern.

A generator streams numbers in the order they are asked for. A chunked kernel that asked it for one
tile's draws at a time would drop other weights for other block sizes, and one that asked for all
L_q x L_k draws at once would hold the matrix the kernel exists to avoid. FlashAttention's answer
(a counter-based generator, Salmon et al. 2011, "Random123") is used here: one key is drawn from the
caller's generator per call, and the draw of weight (n, i, j) is a function of the key and the
weight's position alone:

    t     = (n L_q + i) L_k + j                    the weight's place in the (N, L_q, L_k) weights, row-major
    z     = mix(key + (t + 1) γ)                   splitmix64 (Steele, Lea & Flood 2014), γ = 0x9E3779B97F4A7C15
    u     = (z >> 11) / 2^53                       uniform on [0, 1), 53 bits
    M_nij = [u >= p]                               kept with probability 1 - p

    mix(z): z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31

(all arithmetic mod 2^64). Each tile computes the draws of its own cells, (n, block_q, block_k) at a
time, so the pattern is the same for every block_q and block_k and for every schedule of the tiles.
N is the leading (batch, head) axes flattened, so every batch element and head has its own cells.
The arithmetic is NumPy's (unsigned 64-bit, wrapping); a torch caller converts the factors.
"""

import numpy as np

GAMMA = np.uint64(0x9E3779B97F4A7C15)
MIX_1, MIX_2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def key_from(generator, backend: str) -> int:
    """One 62-bit key drawn from the caller's generator (np.random.Generator or torch.Generator; None: a fresh one)."""
    if backend == "numpy":
        rng = np.random.default_rng() if generator is None else generator
        return int(rng.integers(0, 2**62))
    import torch

    return int(torch.randint(0, 2**62, (1,), generator=generator))


# --8<-- [start:keep_factors]
def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place on a uint64 array."""
    z ^= z >> np.uint64(30)
    z *= MIX_1
    z ^= z >> np.uint64(27)
    z *= MIX_2
    z ^= z >> np.uint64(31)
    return z


def keep_factors(key: int, dropout_p: float, L_q: int, L_k: int, heads: tuple[int, int],
                 rows: tuple[int, int], cols: tuple[int, int]) -> np.ndarray:
    """M / (1 - p) for the tile heads [n0, n1) x rows [i0, i1) x cols [j0, j1): (n, bq, bk) float64, each entry
    1 / (1 - p) (kept) or 0 (dropped)."""
    n = np.arange(*heads, dtype=np.uint64)[:, None, None]  # (n, 1, 1)
    i = np.arange(*rows, dtype=np.uint64)[None, :, None]  # (1, bq, 1)
    j = np.arange(*cols, dtype=np.uint64)[None, None, :]  # (1, 1, bk)
    t = (n * np.uint64(L_q) + i) * np.uint64(L_k) + j  # (n, bq, bk): the weight's place, row-major
    z = _mix(np.uint64(key) + (t + np.uint64(1)) * GAMMA)
    u = (z >> np.uint64(11)).astype(np.float64) * 2.0**-53  # (n, bq, bk), uniform on [0, 1)
    return np.where(u >= dropout_p, 1.0 / (1.0 - dropout_p), 0.0)
# --8<-- [end:keep_factors]
