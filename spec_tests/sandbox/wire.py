"""The wire format between the suite and an isolated worker: JSON metadata plus raw array bytes.

Nothing that crosses the pipe is ever unpickled: the worker runs untrusted code, so the
trusted side reads only JSON (`json.loads`) and the bytes of arrays whose dtype is one of a
few plain numeric ones (`np.frombuffer`), with shape and dtype from the JSON.

    message = u64 length | u32 header length | header JSON | blob 0 | blob 1 | ...
    header  = {"body": <value>, "blobs": [n0, n1, ...]}
    value   = JSON scalar | list | {"t": [...]} (tuple) | {"d": [[key, value], ...]} (dict)
            | {"a": [i, dtype, shape]} (the i-th blob) | {"s": [start, stop, step]} (slice)
            | {"h": [generation, id, dtype, shape]} (a handle to a native array the worker keeps)
            | {"g": seed} (arrays.Seeded: a random generator the worker makes in the implementation's kind)

`read` enforces a deadline (a wall-clock backstop), a caller's check (the per-call CPU limit) and a size limit, so a worker that hangs,
dies or floods the pipe cannot stall or exhaust the suite.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time

import numpy as np

from spec_tests.harness.arrays import Seeded

MAX_MESSAGE = 512 * 2**20  # bytes; a bigger message ends the worker
DTYPES = {np.dtype(t).str: np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
                                                  "uint32", "uint64", "float16", "float32", "float64")}


class WireError(Exception):
    """The other side sent something malformed, too large, or nothing in time."""


class Timeout(WireError):
    pass


class Closed(WireError):
    pass


class Handle:
    """A native array that lives in the worker: (generation, id), with its dtype name and shape."""

    __slots__ = ("generation", "id", "dtype", "shape")

    def __init__(self, generation: int, id: int, dtype: str, shape: tuple):
        self.generation, self.id, self.dtype, self.shape = generation, id, dtype, tuple(shape)


# -- encoding ------------------------------------------------------------------------------
def encode(value, handle_of=None) -> bytes:
    """value -> message bytes. `handle_of(obj)` may turn an object into a Handle (worker side)."""
    blobs: list[bytes] = []

    def enc(v):
        if isinstance(v, Handle):
            return {"h": [v.generation, v.id, v.dtype, list(v.shape)]}
        if isinstance(v, np.ndarray):
            if v.dtype.str not in DTYPES:
                raise TypeError(f"arrays of dtype {v.dtype} cannot cross the wire")
            blobs.append(np.ascontiguousarray(v).tobytes())
            return {"a": [len(blobs) - 1, v.dtype.str, list(v.shape)]}
        if isinstance(v, (np.bool_, np.integer, np.floating)):
            return v.item()
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, tuple):
            return {"t": [enc(x) for x in v]}
        if isinstance(v, list):
            return [enc(x) for x in v]
        if isinstance(v, dict):
            return {"d": [[str(k), enc(x)] for k, x in v.items()]}
        if isinstance(v, slice):
            return {"s": [v.start, v.stop, v.step]}
        if isinstance(v, Seeded):
            return {"g": v.seed}
        if handle_of is not None:
            h = handle_of(v)
            if h is not None:
                return enc(h)
        raise TypeError(f"a value of type {type(v).__name__} cannot cross the wire")

    header = json.dumps({"body": enc(value), "blobs": [len(b) for b in blobs]}).encode()
    payload = struct.pack("<I", len(header)) + header + b"".join(blobs)
    return struct.pack("<Q", len(payload)) + payload


def decode(payload: bytes, handle=None):
    """message payload (without its length prefix) -> value. `handle(Handle)` resolves handles."""
    try:
        (n,) = struct.unpack_from("<I", payload, 0)
        header = json.loads(payload[4:4 + n])
        blobs, pos = [], 4 + n
        for size in header["blobs"]:
            blobs.append(payload[pos:pos + int(size)])
            pos += int(size)
    except WireError:
        raise
    except Exception as exc:  # noqa: BLE001 - anything malformed is the same failure
        raise WireError(f"malformed message: {type(exc).__name__}: {exc}") from None

    def dec(v):
        if isinstance(v, list):
            return [dec(x) for x in v]
        if not isinstance(v, dict):
            return v
        if "a" in v:
            i, dtype, shape = v["a"]
            if dtype not in DTYPES:
                raise WireError(f"refused an array of dtype {dtype!r}")
            shape = tuple(int(s) for s in shape)
            return np.frombuffer(blobs[int(i)], dtype=DTYPES[dtype]).reshape(shape).copy()
        if "t" in v:
            return tuple(dec(x) for x in v["t"])
        if "d" in v:
            return {str(k): dec(x) for k, x in v["d"]}
        if "s" in v:
            return slice(*v["s"])
        if "g" in v:
            return Seeded(int(v["g"]))
        if "h" in v:
            g, i, dtype, shape = v["h"]
            h = Handle(int(g), int(i), str(dtype), tuple(int(s) for s in shape))
            return handle(h) if handle is not None else h
        raise WireError(f"malformed value {str(v)[:80]!r}")

    try:
        return dec(header["body"])
    except WireError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise WireError(f"malformed message: {type(exc).__name__}: {exc}") from None


# -- transport -----------------------------------------------------------------------------
CHECK_EVERY = 0.1  # seconds between two calls of a read's `check` (a CPU-time limit, say)


def _wait(fd: int, event: int, deadline: float | None, check=None) -> None:
    """Wait until fd is ready; raise Timeout at the deadline. `check()`, called every CHECK_EVERY s
    while waiting, may raise (a Timeout of its own) to give up earlier."""
    poller = select.poll()
    poller.register(fd, event | select.POLLERR | select.POLLHUP)
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if check is not None:
            left = CHECK_EVERY if left is None else min(left, CHECK_EVERY)
        if poller.poll(None if left is None else left * 1000):
            return
        if deadline is not None and time.monotonic() >= deadline:
            raise Timeout("no answer in time")
        if check is not None:
            check()


def write(fd: int, data: bytes, deadline: float | None = None) -> None:
    """Write all of data to a non-blocking fd before the deadline."""
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BlockingIOError:
            _wait(fd, select.POLLOUT, deadline)
            continue
        except (BrokenPipeError, OSError) as exc:
            raise Closed(f"the other side closed the pipe ({exc})") from None
        view = view[n:]


def read(fd: int, deadline: float | None = None, limit: int = MAX_MESSAGE, check=None) -> bytes:
    """Read one message payload from a non-blocking fd before the deadline (and while `check()` passes)."""
    head = _read_exactly(fd, 8, deadline, check)
    (size,) = struct.unpack("<Q", head)
    if size > limit:
        raise WireError(f"a message of {size} bytes is over the limit of {limit}")
    return _read_exactly(fd, size, deadline, check)


def _read_exactly(fd: int, n: int, deadline: float | None, check=None) -> bytes:
    chunks, got = [], 0
    while got < n:
        try:
            chunk = os.read(fd, min(n - got, 1 << 20))
        except BlockingIOError:
            _wait(fd, select.POLLIN, deadline, check)
            continue
        if not chunk:
            raise Closed("the other side closed the pipe")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
