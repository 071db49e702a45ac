"""One intra-op thread for a library call on the suite's inputs (a speed setting, not a conversion).

The spec's inputs hold a few dozen numbers. On them PyTorch's intra-op thread pool costs more than it
saves: its threads wait for work by spinning, and on a machine whose cores are shared (CI, a laptop
running other jobs) a call of FlexAttention eager takes about 10 times as long with two threads as
with one (~100 ms against ~12 ms, measured on the 2-core development machine). What is computed is
the same; only a reduction that several threads would have split is summed in one piece (a difference
of rounding, which the spec's tolerances are for, and none at the spec's sizes, below PyTorch's grain).

    with one_thread():
        out = flex_attention(q, k, v)

The previous thread count is put back afterwards, so the setting never leaks into other modules run in
the same process (the suite runs several implementations in one session).
"""

from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def one_thread():
    """torch.set_num_threads(1) for the block, then the count it had."""
    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
