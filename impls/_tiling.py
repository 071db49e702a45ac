"""Block bookkeeping for the chunked implementations (numpy_chunked, torch_chunked; triton_flash's sizes).

The score matrix S (..., L_q, L_k) is cut into tiles of block_q queries by block_k keys. A
tile is skipped when no pair in it is visible: wholly above the bottom-right causal diagonal
(query i sees key j iff j <= i + L_k - L_q), or wholly hidden by the mask. Array-library
neutral: the arrays are NumPy arrays or torch tensors, and `arange` is the library's own.
"""


def block_sizes(block_q, block_k, default_q: int, default_k: int) -> tuple[int, int]:
    """(block_q, block_k), None meaning the default; each must be at least 1."""
    bq = default_q if block_q is None else int(block_q)
    bk = default_k if block_k is None else int(block_k)
    if bq < 1 or bk < 1:
        raise ValueError(f"block sizes must be at least 1, got block_q={block_q}, block_k={block_k}")
    return bq, bk


class TilePlan:
    """Which key blocks each query block needs, and which pairs of a tile are hidden."""

    def __init__(self, L_q: int, L_k: int, mask, is_causal: bool, block_q: int, block_k: int, arange):
        self.L_q, self.L_k, self.bq, self.bk = L_q, L_k, block_q, block_k
        self.mask = None if mask is None else (mask if mask.ndim >= 2 else mask[None, :])  # (..., L_q or 1, L_k or 1)
        self.is_causal = is_causal
        self.offset = L_k - L_q  # causal: query i sees keys j <= i + offset
        self.arange = arange

    def query_blocks(self):
        """(i0, i1) for each block of queries."""
        for i0 in range(0, self.L_q, self.bq):
            yield i0, min(i0 + self.bq, self.L_q)

    def key_blocks(self, i0: int, i1: int):
        """(j0, j1) for each block of keys the queries [i0, i1) may see: with is_causal, none past the diagonal."""
        end = self.L_k
        if self.is_causal:  # query i1 - 1 sees keys up to i1 - 1 + offset; later blocks never come
            end = max(0, min(self.L_k, i1 + self.offset))
        for j0 in range(0, end, self.bk):
            yield j0, min(j0 + self.bk, self.L_k)

    def hidden(self, i0: int, i1: int, j0: int, j1: int, flat=None):
        """Which pairs of tile [i0, i1) x [j0, j1) are hidden, broadcastable to it; None when none is.

        `flat` reshapes the mask's tile (..., bq or 1, bk or 1) to the caller's batch layout.
        """
        hide = None
        if self.mask is not None:
            m = self.mask
            rows = slice(i0, i1) if m.shape[-2] > 1 else slice(0, 1)
            cols = slice(j0, j1) if m.shape[-1] > 1 else slice(0, 1)
            tile = m[..., rows, cols]
            hide = ~(tile if flat is None else flat(tile))  # (..., bq or 1, bk or 1)
        if self.is_causal and j1 - 1 > i0 + self.offset:  # the tile straddles the diagonal
            above = self.arange(j0, j1) > self.arange(i0, i1)[:, None] + self.offset  # (bq, bk)
            hide = above if hide is None else hide | above
        return hide
