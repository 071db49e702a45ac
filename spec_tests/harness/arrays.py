"""Array conversion between the suite (NumPy float64) and an implementation's backend.

The suite draws every input as NumPy; an implementation receives arrays of its
own BACKEND, DEVICE and dtype, and its results come back as NumPy float64.
Rounding an input through the implementation's dtype (`round_trip`) gives the
values the implementation actually saw, which is what the reference is fed.
"""

from __future__ import annotations

import numpy as np

KNOWN_FLOATS = ("float64", "float32", "float16", "bfloat16")
EPS = {"float64": 2.0**-52, "float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


_TORCH = None


def torch_module():
    """torch, imported on first use; small test inputs run faster on one thread (MHA_SPEC_TORCH_THREADS)."""
    global _TORCH
    if _TORCH is None:
        import os

        import torch

        torch.set_num_threads(int(os.environ.get("MHA_SPEC_TORCH_THREADS", "1")))
        _TORCH = torch
    return _TORCH


def torch_dtype(name: str):
    return getattr(torch_module(), name)


def round_to_bfloat16(x: np.ndarray) -> np.ndarray:
    """Round float values to the nearest bfloat16 (ties to even), returned as float32."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounding = 0x7FFF + ((bits >> 16) & 1)
    out = (((bits + rounding) >> 16) << 16).astype(np.uint32).view(np.float32)
    return np.where(np.isfinite(x), out, np.asarray(x, dtype=np.float32))


class Seeded:
    """A random generator for the implementation to draw from (dropout's `generator=`), made just before the call in
    the implementation's own kind: `np.random.default_rng(seed)` for NumPy, `torch.Generator().manual_seed(seed)` for
    torch. Tests pass Seeded(seed); the same seed gives the same generator state."""

    __slots__ = ("seed",)

    def __init__(self, seed: int):
        self.seed = int(seed)

    def __repr__(self) -> str:
        return f"Seeded({self.seed})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Seeded) and other.seed == self.seed

    def __hash__(self) -> int:
        return hash(("Seeded", self.seed))

    def native(self, backend: str, device: str = "cpu"):
        if backend == "numpy":
            return np.random.default_rng(self.seed)
        g = torch_module().Generator(device=device)
        g.manual_seed(self.seed)
        return g


def with_generators(kwargs: dict, backend: str, device: str = "cpu") -> dict:
    """kwargs with every Seeded value replaced by a fresh generator of the backend (a new one per call)."""
    if not any(isinstance(v, Seeded) for v in kwargs.values()):
        return kwargs
    return {k: v.native(backend, device) if isinstance(v, Seeded) else v for k, v in kwargs.items()}


def is_native(x) -> bool:
    return type(x).__module__.startswith("torch") or isinstance(x, np.ndarray)


def to_native(x, backend: str, dtype: str, device: str = "cpu"):
    """A NumPy array as the implementation's array: floats in `dtype`, bools stay bool, ints int64."""
    x = np.asarray(x)
    if backend == "numpy":
        if x.dtype == np.bool_:
            return x.copy()
        if np.issubdtype(x.dtype, np.integer):
            return x.astype(np.int64)
        return x.astype(dtype)
    torch = torch_module()
    if x.dtype == np.bool_:
        return torch.from_numpy(x.copy()).to(device)
    if np.issubdtype(x.dtype, np.integer):
        return torch.from_numpy(x.astype(np.int64)).to(device)
    # Round in NumPy, once: torch's float64 -> float16 goes through float32 and can round twice,
    # which would hand the implementation values other than those `round_trip` reports.
    staged = round_to_bfloat16(x) if dtype == "bfloat16" else np.asarray(x, dtype=dtype)
    t = torch.from_numpy(np.ascontiguousarray(staged))
    return t.to(device=device, dtype=torch_dtype(dtype))


def to_numpy(y) -> np.ndarray:
    """An implementation's result as NumPy float64 (bools stay bool)."""
    if type(y).__module__.startswith("torch"):
        torch = torch_module()
        y = y.detach()
        if y.dtype == torch.bool:
            return y.cpu().numpy().copy()
        return y.to(device="cpu", dtype=torch.float64).numpy().copy()
    y = np.asarray(y)
    if y.dtype == np.bool_:
        return y.copy()
    return y.astype(np.float64)


def round_trip(x, dtype: str) -> np.ndarray:
    """The float64 values an implementation sees after `x` is cast to `dtype`."""
    x = np.asarray(x)
    if x.dtype == np.bool_ or np.issubdtype(x.dtype, np.integer):
        return x
    if dtype == "bfloat16":
        return round_to_bfloat16(x).astype(np.float64)
    return x.astype(dtype).astype(np.float64)


def in_numpy_dtype(x, dtype: str):
    """x as a NumPy array computing in `dtype`: float32/float64 natively, float16/bfloat16 emulated."""
    x = np.asarray(x)
    if x.dtype == np.bool_ or np.issubdtype(x.dtype, np.integer):
        return x
    if dtype in ("float16", "bfloat16"):
        return LowPrecision.of(x, dtype)
    return x.astype(dtype)


def native_dtype_name(y) -> str:
    return str(y.dtype).replace("torch.", "")


def map_arrays(obj, fn):
    """Apply fn to every array inside obj (arrays, tuples, lists, dicts); leave scalars alone."""
    if isinstance(obj, np.ndarray) or is_native(obj):
        return fn(obj)
    if isinstance(obj, dict):
        return {k: map_arrays(v, fn) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return type(obj)(map_arrays(v, fn) for v in obj)
    return obj


def round_to(x, dtype: str) -> np.ndarray:
    """Round float32/float64 values to `dtype` ("float16" or "bfloat16"), kept as float32."""
    if dtype == "bfloat16":
        return round_to_bfloat16(x)
    return np.asarray(x).astype(dtype).astype(np.float32)


class LowPrecision(np.ndarray):
    """float32 storage whose every operation's result is rounded to a lower precision.

    Running the reference code on these arrays emulates "the naive reference
    computed in float16 / bfloat16" the way PyTorch computes it: each matmul
    and reduction accumulates in float32, each result is stored in the low
    precision. NumPy has no bfloat16, and its own float16 matmul accumulates in
    float16, which is not what any GPU or PyTorch kernel does.
    """

    target = "float16"

    @classmethod
    def of(cls, x, target: str):
        sub = _LOW[target]
        return round_to(np.asarray(x, dtype=np.float32), target).view(sub)

    @classmethod
    def _wrap(cls, out):
        if isinstance(out, tuple):
            return tuple(cls._wrap(o) for o in out)
        if isinstance(out, np.ndarray) and out.dtype.kind == "f":
            return round_to(out.view(np.ndarray).astype(np.float32, copy=False), cls.target).view(cls)
        if isinstance(out, np.floating):
            return cls._wrap(np.asarray(out))
        return out

    @staticmethod
    def _plain(obj):
        if isinstance(obj, LowPrecision):
            return obj.view(np.ndarray)
        if isinstance(obj, (tuple, list)):
            return type(obj)(LowPrecision._plain(o) for o in obj)
        if isinstance(obj, dict):
            return {k: LowPrecision._plain(v) for k, v in obj.items()}
        return obj

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = getattr(ufunc, method)(*self._plain(inputs), **self._plain(kwargs))
        return self._wrap(out)

    def __array_function__(self, func, types, args, kwargs):
        return self._wrap(func(*self._plain(args), **self._plain(kwargs)))


class _Float16(LowPrecision):
    target = "float16"


class _BFloat16(LowPrecision):
    target = "bfloat16"


_LOW = {"float16": _Float16, "bfloat16": _BFloat16}
