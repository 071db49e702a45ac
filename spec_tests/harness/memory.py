"""Peak extra memory of one call, measured by counting allocations, and fitted growth exponents.

Allocation counts are stable where times are not (speed and memory are measured in benchmarks, not asserted), so memory
claims (EFF-2) can be asserted, with wide margins. What is counted:

* NumPy: `tracemalloc`, which NumPy reports every array buffer to. Peak during the call
  minus what was allocated before it.
* PyTorch on the CPU: the profiler's memory events (`profile_memory=True`): every
  allocation and free through PyTorch's CPU allocator, in order; the peak of their running
  sum. PyTorch keeps no CPU allocator statistics of its own (only CUDA has
  `max_memory_allocated`). Allocations made on worker threads the profiler does not follow
  can be missed; `tracemalloc`'s peak is added to it, so that NumPy arrays a torch
  implementation makes (or Triton's interpreter makes) count too: the sum is an upper bound.
* PyTorch on a GPU: `torch.cuda.max_memory_allocated`, reset before the call.

Inputs are converted to the implementation's arrays before measuring: only what the call
itself allocates (its output included) is counted.
"""

from __future__ import annotations

import math
import tracemalloc

import numpy as np


def _tracemalloc_peak(fn):
    """(result, peak bytes NumPy/Python allocated during fn() beyond what was live before)."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return result, max(0, peak - before)


def _torch_cpu_peak(fn):
    """(result, peak bytes of PyTorch's CPU allocator during fn() from the profiler's memory events
    + the tracemalloc peak during fn())."""
    # The autograd profiler (torch.profiler's engine, without its front end): torch.profiler.profile
    # imports ~900 modules (sympy, torch._dynamo, ...) on first use, ten seconds on a busy machine.
    from torch.autograd.profiler import profile

    with profile(profile_memory=True) as prof:
        result, other = _tracemalloc_peak(fn)
    events = [e for e in prof.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_ns())
    live = peak = 0
    for e in events:  # nbytes > 0: an allocation; < 0: a free
        live += e.nbytes()
        peak = max(peak, live)
    return result, peak + other


def _torch_cuda_peak(fn):
    import torch

    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    result = fn()
    torch.cuda.synchronize()
    return result, max(0, torch.cuda.max_memory_allocated() - before)


def method(backend: str, device: str = "cpu") -> str:
    """How peak_bytes measures for this backend and device (for reports)."""
    if backend == "numpy":
        return "tracemalloc"
    if device == "cuda":
        return "torch.cuda.max_memory_allocated"
    return "torch profiler memory events + tracemalloc"


def peak_bytes(fn, backend: str, device: str = "cpu"):
    """(result, peak extra bytes) of calling fn(), measured for the implementation's backend and device."""
    if backend == "numpy":
        return _tracemalloc_peak(fn)
    if device == "cuda":
        return _torch_cuda_peak(fn)
    return _torch_cpu_peak(fn)


def fitted_exponent(sizes, values) -> float:
    """The slope of log(values) against log(sizes): values ~ c * size**slope."""
    x = np.log(np.asarray(sizes, dtype=float))
    y = np.log(np.maximum(np.asarray(values, dtype=float), 1.0))
    return float(np.polyfit(x, y, 1)[0]) if len(x) >= 2 and math.isfinite(float(y.sum())) else float("nan")


def growth_exponent(sizes, values) -> float:
    """The exponent p of the part that grows: fitted to the increments v(L_i) - v(L_{i-1}) over doubling sizes.

    A peak of c + b L^p (a fixed cost c: buffers of one tile, the runtime's own) has increments
    b (2^p - 1) L_{i-1}^p, whose fitted exponent is p whatever c is; the exponent of the peaks
    themselves is pulled below p by c at small L.
    """
    sizes, values = np.asarray(sizes, dtype=float), np.asarray(values, dtype=float)
    if len(sizes) < 3 or not np.allclose(sizes[1:] / sizes[:-1], 2.0):
        raise ValueError(f"growth_exponent needs at least 3 doubling sizes, got {sizes.tolist()}")
    return fitted_exponent(sizes[:-1], np.diff(values))
