"""The isolated worker: imports an implementation and runs its functions for the suite (`--isolate`).

    python -m spec_tests.sandbox.worker --in FD --out FD --generation N [--uid U --gid G] [limits]

It starts as trusted code: it sets its resource limits (address space, CPU time, processes, file
size) and, when started as root, leaves the network (a new, empty network namespace), makes the
suite and Python read-only in a mount namespace of its own (where the kernel allows), and drops
to an unprivileged user; only then does it import the implementation. From that
moment it is untrusted: the suite (spec_tests/sandbox/isolation.py) reads nothing from it but
JSON and .npy arrays (wire.py), computes every expected value itself, and enforces the time
limits from outside. What the rubric bans is watched by guard.py, installed before the import.
This process never sees an expected value: it receives inputs and returns
outputs.

Requests, one at a time: load, call, native, call_native, get, method, attr (OPERATIONS).
Arrays of the implementation's own backend stay here as handles, for the checks that need them
(inputs left unmodified, output dtype, autograd through a causal mask).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import inspect
import json
import os
import resource
import stat
import sys
import traceback

import numpy as np

from spec_tests.harness.scope import OutOfScope

CLONE_NEWNET, CLONE_NEWNS = 0x40000000, 0x00020000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE, MNT_DETACH = 1, 32, 4096, 16384, 1 << 18, 2
PR_SET_KEEPCAPS, CAP_DAC_READ_SEARCH = 8, 2
# What the suite may ask of a native array it holds a handle to (see test_errors.py, test_masks.py).
METHODS = {"requires_grad_", "sum", "backward", "__getitem__", "detach"}
ATTRIBUTES = {"requires_grad", "grad", "dtype", "shape", "ndim"}
OPERATIONS = {"load", "call", "native", "call_native", "bench", "get", "method", "attr"}


def _limit(name: str, value: int) -> None:
    """Set both the soft and the hard limit, so the implementation cannot raise it again."""
    kind = getattr(resource, name)
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY and os.geteuid() != 0:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def confine(opts) -> list[str]:
    """Limits, no network, unprivileged user, read-only suite. Returns notes on what was not possible."""
    notes = []
    mb = 2**20
    _limit("RLIMIT_AS", opts.memory_mb * mb)
    _limit("RLIMIT_CPU", opts.cpu_seconds)
    _limit("RLIMIT_FSIZE", opts.file_mb * mb)
    _limit("RLIMIT_CORE", 0)
    if opts.uid is None:
        return notes
    _limit("RLIMIT_NPROC", opts.processes)  # counted per user: meaningful for a user of our own only
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET) != 0:
        notes.append(f"the worker keeps the network (unshare: errno {ctypes.get_errno()})")
    needed = _needed_paths(opts.extra_path)
    closed = [p for p in needed if _closed_ancestor(p)]
    mounted = libc.unshare(CLONE_NEWNS) == 0
    if mounted:
        try:
            _mount_view(libc, needed, opts.stage)
        except OSError as exc:
            notes.append(f"read-only view of the suite not made ({exc})")
            mounted = False
    if mounted and opts.disk_mb:
        try:
            _private_tmp(libc, needed, opts)
        except OSError as exc:
            notes.append(f"no private /tmp and /dev/shm ({exc}): files the worker writes there are removed after it")
    keep_read = bool(closed) and not mounted
    if keep_read:  # Python itself lies in a folder other users cannot enter (e.g. /root/.pyenv)
        libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0)
        notes.append(f"the worker keeps the right to read every file: {closed[0]} is closed to other users")
    os.setgroups([])
    os.setgid(opts.gid)
    os.setuid(opts.uid)
    if keep_read:
        _keep_only_capability(libc, CAP_DAC_READ_SEARCH)
    return notes


def _needed_paths(extra_path: str | None) -> list[str]:
    """What the worker must read after dropping root: Python, its packages, the suite, the implementation."""
    suite = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [sys.base_prefix, sys.prefix, suite] + ([extra_path] if extra_path else [])
    paths = [os.path.realpath(p) for p in paths if p and os.path.isdir(p)]
    return [p for p in dict.fromkeys(paths) if not any(p != q and p.startswith(q + os.sep) for q in paths)]


def _closed_ancestor(path: str) -> str | None:
    """The outermost folder on the way to `path` that other users cannot enter, if any."""
    parts = path.strip(os.sep).split(os.sep)
    for i in range(1, len(parts) + 1):
        folder = os.sep + os.sep.join(parts[:i])
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return folder
    return None


def _mount(libc, source, target, fstype, flags, data=None) -> None:
    enc = lambda x: x.encode() if x is not None else None  # noqa: E731
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise OSError(ctypes.get_errno(), f"mount {target}: {os.strerror(ctypes.get_errno())}")


def _mount_view(libc, needed: list[str], stage: str) -> None:
    """In this process's own mount namespace: the suite and Python read-only, and readable.

    A folder closed to other users (say /root, holding Python) is covered by an empty tmpfs
    that anyone may enter, and only the paths the worker needs are bound back into it, read-only.
    """
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    by_ancestor: dict[str, list[str]] = {}
    for p in needed:
        by_ancestor.setdefault(_closed_ancestor(p) or "", []).append(p)
    for ancestor, paths in by_ancestor.items():
        staged = []
        if ancestor:
            for p in paths:
                s = os.path.join(stage, str(len(os.listdir(stage))))
                os.makedirs(s)
                _mount(libc, p, s, None, MS_BIND | MS_REC)
                staged.append((s, p))
            _mount(libc, "tmpfs", ancestor, "tmpfs", 0, "mode=755")
            for s, p in staged:
                os.makedirs(p, mode=0o755, exist_ok=True)
                _mount(libc, s, p, None, MS_BIND | MS_REC)
                libc.umount2(s.encode(), MNT_DETACH)
        else:
            for p in paths:
                _mount(libc, p, p, None, MS_BIND | MS_REC)
        for p in paths:
            _mount(libc, None, p, None, MS_REMOUNT | MS_BIND | MS_RDONLY)


PRIVATE = ("/tmp", "/var/tmp", "/dev/shm")  # where any user may write: the worker's own, in one tmpfs


def _mount_points() -> list[str]:
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 4:
                points.append(parts[4].encode().decode("unicode_escape"))
    return points


def _private_tmp(libc, needed: list[str], opts) -> None:
    """/tmp, /var/tmp and /dev/shm are folders of one tmpfs of opts.disk_mb (the worker's whole disk quota),
    seen by this mount namespace only, so they vanish with its last process; the scratch folder is one of
    them (the implementation's copy bound back read-only), and every other mount is read-only.

    Paths the worker reads that lie under those folders (the implementation's own folder, say) are bound
    back into the tmpfs, read-only."""
    scratch = os.getcwd()
    tmpfs = os.path.join(opts.stage, "private")
    os.makedirs(tmpfs)
    _mount(libc, "tmpfs", tmpfs, "tmpfs", 0, f"size={opts.disk_mb}m,mode=755,nr_inodes=65536")
    under = lambda p, top: p == top or p.startswith(top + os.sep)  # noqa: E731
    mirrors = []
    for top in sorted((t for t in PRIVATE if os.path.isdir(t)), key=lambda t: t == "/tmp"):  # /tmp last:
        mirror = os.path.join(tmpfs, top.strip("/").replace("/", "_"))  # it holds the tmpfs
        os.mkdir(mirror)
        os.chmod(mirror, 0o1777)
        binds = [(p, True) for p in needed if under(p, top)]
        if under(scratch, top):
            binds.append((scratch, False))
        for path, read_only in binds:
            inside = os.path.join(mirror, os.path.relpath(path, top))
            os.makedirs(inside, exist_ok=True)
            if read_only:
                _mount(libc, path, inside, None, MS_BIND | MS_REC)
                _mount(libc, None, inside, None, MS_REMOUNT | MS_BIND | MS_RDONLY)
            else:  # the scratch folder: a folder of the tmpfs of its own, the implementation's copy read-only
                os.chown(inside, opts.uid, opts.gid)
                if os.path.isdir(os.path.join(path, "impl")):
                    os.makedirs(os.path.join(inside, "impl"), exist_ok=True)
                    _mount(libc, os.path.join(path, "impl"), os.path.join(inside, "impl"), None, MS_BIND)
                    _mount(libc, None, os.path.join(inside, "impl"), None, MS_REMOUNT | MS_BIND | MS_RDONLY)
        mirrors.append((mirror, top))
    for mirror, top in mirrors:
        _mount(libc, mirror, top, None, MS_BIND | MS_REC)
    os.chdir(scratch)  # the scratch folder's path, now in the tmpfs
    ours = set(PRIVATE)
    for point in _mount_points():  # nothing else the worker could write to: every other mount read-only
        if point in ours or any(under(point, top) for top in ours) or point.split("/")[1:2] in (["proc"], ["sys"],
                                                                                             ["dev"]):
            continue
        libc.mount(None, point.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None)  # best effort


def _keep_only_capability(libc, cap: int) -> None:
    """After setuid with PR_SET_KEEPCAPS: keep `cap` alone, effective and permitted."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    data = (Data * 2)()
    data[0].effective = data[0].permitted = 1 << cap
    if libc.capset(ctypes.byref(Header(0x20080522, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")


class Worker:
    def __init__(self, generation: int, notes: list[str]):
        from spec_tests.harness import arrays

        self.arrays = arrays
        self.generation = generation
        self.notes = notes
        self.impl = None
        from spec_tests.sandbox import guard

        # Captured before the implementation is imported: what it later replaces does not reach these. What is
        # replaced anyway (through the frames, say) cannot make a call's seal: the suite would see that.
        self._guard, self._audit, self._watch = guard, sys.audit, guard.watch_sealed
        self.hits: list = []
        self.handles: dict[int, object] = {}
        self.next_id = 0

    # -- handles ------------------------------------------------------------------------
    def _handle(self, obj):
        from spec_tests.sandbox.wire import Handle

        if not self.arrays.is_native(obj):
            return None
        for hid, held in self.handles.items():
            if held is obj:
                break
        else:
            self.next_id += 1
            hid = self.next_id
            self.handles[hid] = obj
        return Handle(self.generation, hid, self.arrays.native_dtype_name(obj), tuple(int(s) for s in obj.shape))

    def _resolve(self, h):
        if h.generation != self.generation or h.id not in self.handles:
            raise LookupError(f"array handle {h.id} is gone (the worker was restarted)")
        return self.handles[h.id]

    def _plain(self, value):
        """A result as values that cross the wire: arrays become handles, torch dtypes names."""
        if self.arrays.is_native(value):
            return self._handle(value)
        if isinstance(value, (tuple, list)):
            return type(value)(self._plain(v) for v in value)
        if isinstance(value, dict):
            return {k: self._plain(v) for k, v in value.items()}
        if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
            return str(value).replace("torch.", "")
        if type(value).__name__ == "Size":
            return tuple(int(s) for s in value)
        return value

    # -- requests -----------------------------------------------------------------------
    def load(self, spec: str, banned, extra_path: str | None, banned_ops=()):
        from spec_tests.harness import loader

        if extra_path:
            sys.path.append(extra_path)
        impl = loader.load(spec)  # the watch was installed at start-up (main), with the rubric's bans
        self.impl = impl
        functions = {}
        module = impl.module
        for name in sorted(dir(module)) if module is not None else []:
            if name.startswith("_"):
                continue
            fn = getattr(module, name, None)
            if not callable(fn) or inspect.isclass(fn) or inspect.ismodule(fn):
                continue
            try:
                params = inspect.signature(fn).parameters
                keywords = None if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()) \
                    else [str(p) for p in params]
            except (TypeError, ValueError):
                keywords = None
            functions[name[:200]] = keywords
        return {"name": impl.name, "backend": impl.backend, "device": impl.device, "dtypes": list(impl.dtypes),
                "unavailable": impl.unavailable, "path": impl.path, "functions": functions,
                "contract": list(impl.contract) if impl.contract else None, "flash": impl.flash,
                "notes": list(impl.notes) + self.notes}

    def _function(self, fname: str):
        fn = getattr(self.impl.module, fname, None)
        if not callable(fn):
            raise AttributeError(f"no function {fname}()")
        return fn

    def _converted(self, fn, convert, args, kwargs, nonce=""):
        """fn(*args, **kwargs) under the watch, its result checked to be plain (`plain`) before the call ends, then
        convert(its result), which so runs no code of the implementation's; both sealed (guard.watch_sealed)."""
        backend = self.impl.backend

        def run():
            result = fn(*args, **kwargs)
            plain(result, backend)
            return result

        return self._watch(self._audit, self.hits, nonce, run, convert)

    def call(self, fname, dtype, args, kwargs, nonce=""):
        impl, a = self.impl, self.arrays
        to_native = lambda x: a.to_native(x, impl.backend, dtype, impl.device)  # noqa: E731
        args, kwargs = a.map_arrays(args, to_native), a.map_arrays(kwargs, to_native)
        kwargs = a.with_generators(kwargs, impl.backend, impl.device)  # dropout's generator=Seeded(seed)
        result, values = self._converted(self._function(fname), lambda r: a.map_arrays(r, a.to_numpy), args, kwargs,
                                         nonce)
        first = result[0] if type(result) in (tuple, list) and result else result
        seen = a.native_dtype_name(first) if a.is_native(first) else None
        return {"result": values, "dtype": seen}

    def native(self, dtype, value):
        impl, a = self.impl, self.arrays
        return a.map_arrays(value, lambda x: self._handle(a.to_native(x, impl.backend, dtype, impl.device)))

    def call_native(self, fname, args, kwargs, autocast=None, nonce=""):
        """Call with native arrays held here; the inputs before and after and the result come back as
        float64 too, for the suite's record of the call. `autocast` ("cpu:float16"): the suite's test
        called it inside torch.autocast, so it runs inside one here too."""
        a = self.arrays
        before = a.map_arrays((args, kwargs), a.to_numpy)
        convert = lambda r: (a.map_arrays(r, a.to_numpy), a.map_arrays((args, kwargs), a.to_numpy))  # noqa: E731
        with _autocast(autocast):
            result, (values, after) = self._converted(self._function(fname), convert, args, kwargs, nonce)
        first = result[0] if type(result) in (tuple, list) and result else result
        return {"result": self._plain(result), "before": before, "after": after, "values": values,
                "dtype": a.native_dtype_name(first) if a.is_native(first) else None}

    def bench(self, fname, args, kwargs, repeats=1, nonce=""):
        """fname(*args, **kwargs) `repeats` times on native arrays held here, under the watch, converting nothing;
        the last result stays here (a handle). The leaderboard (grader/leaderboard.py) times this request and reads
        the worker's peak memory from outside the process, where the implementation cannot change either."""
        fn, backend = self._function(fname), self.impl.backend

        def run():
            result = None
            for _ in range(max(1, int(repeats))):
                result = fn(*args, **kwargs)
            plain(result, backend)
            return result

        result, _ = self._watch(self._audit, self.hits, nonce, run, lambda r: None)
        return {"result": self._plain(result)}

    def get(self, value):
        return self.arrays.map_arrays(value, self.arrays.to_numpy)

    def method(self, target, name, args, autocast=None, nonce=""):
        if name not in METHODS:
            raise AttributeError(f"the suite may not call .{name}() on a worker array")
        with _autocast(autocast):
            return self._plain(self._watch(self._audit, self.hits, nonce, lambda: getattr(target, name)(*args))[0])

    def attr(self, target, name, autocast=None):
        if name not in ATTRIBUTES:
            raise AttributeError(f"the suite may not read .{name} of a worker array")
        return self._plain(getattr(target, name))

    def serve(self, fd_in: int, fd_out: int) -> None:
        import select
        import struct

        from spec_tests.sandbox import wire

        # Taken before the implementation is imported, as this frame's own (fast) locals, which nothing outside it
        # can rebind: the loop restores what it relies on before each request and each reply, and a call's report
        # and result are sealed by the watch besides (guard.seal), so what is replaced anyway is seen by the suite.
        read, decode, encode, write, closed = wire.read, wire.decode, wire.encode, wire.write, wire.Closed
        own = tuple((self, name, getattr(self, name)) for name in ("_watch", "_audit"))
        methods = OPERATIONS | {"_converted", "_plain", "_function", "_resolve", "_handle"}
        used = own + tuple((obj, name, getattr(obj, name)) for obj, names in (
            (json, ("dumps", "loads")), (struct, ("pack", "unpack", "unpack_from")), (os, ("read", "write", "_exit")),
            (select, ("poll",)), (np, ("frombuffer", "ascontiguousarray", "asarray")),
            (self.arrays, ("to_native", "to_numpy", "map_arrays", "is_native", "native_dtype_name", "with_generators")),
            (wire, ("encode", "decode", "read", "write", "_wait", "_read_exactly"))) for name in names) + tuple(
            (Worker, name, vars(Worker)[name]) for name in methods)
        review: list = []

        def restore() -> None:
            for name in methods & set(vars(self)):  # a method shadowed on the instance
                review.append(f"Worker.{name} was shadowed (put back by the grader)")
                delattr(self, name)
            for obj, name, fn in used:
                if getattr(obj, name, None) is not fn:
                    where = type(obj).__name__ if obj is self else getattr(obj, "__name__", "?")
                    note = f"{where}.{name} was replaced (put back by the grader)"
                    if note not in review:
                        review.append(note)
                    setattr(obj, name, fn)

        while True:
            restore()
            try:
                payload = read(fd_in)
            except closed:
                return
            fatal = False
            self.hits = hits = []
            try:
                request = decode(payload, handle=self._resolve)
                op = request.pop("op")
                if op not in OPERATIONS:
                    raise ValueError(f"unknown request {op!r}")
                if request.pop("reset", False):
                    self.handles.clear()
                reply = {"ok": getattr(self, op)(**request)}
            except BaseException as exc:  # noqa: BLE001 - everything is reported, nothing escapes
                fatal = not isinstance(exc, Exception)
                reply = {"error": _describe(exc, fatal)}
            restore()
            reply["banned"] = [str(h) for h in hits]
            reply["review"] = list(review)
            try:
                data = encode(reply, self._handle)
            except BaseException as exc:  # noqa: BLE001 - an unsendable result
                data = encode({"error": _describe(exc, False), "banned": reply["banned"], "review": reply["review"]})
            write(fd_out, data)
            if fatal:
                os._exit(3)


SCALARS = (type(None), bool, int, float, str)


def plain(value, backend: str, where: str = "the result") -> None:
    """Raise TypeError unless `value` is what a contract function returns, exactly: a numpy.ndarray (or, for a
    PyTorch implementation, a torch.Tensor), a plain scalar, or a tuple, list or dict of these. Types are
    compared exactly: a subclass, or an object that converts itself (__array__, __torch_function__), would
    run code of the implementation's while the grader reads the result."""
    kind = type(value)
    if kind is np.ndarray or kind in SCALARS or kind in NUMPY_SCALARS:
        return
    if backend == "torch" and kind is _torch_tensor():
        return
    if kind in (tuple, list):
        for i, v in enumerate(value):
            plain(v, backend, f"{where}[{i}]")
        return
    if kind is dict:
        for k, v in value.items():
            plain(k, backend, f"a key of {where}")
            plain(v, backend, f"{where}[{k!r}]")
        return
    allowed = "a plain numpy.ndarray" + (" or torch.Tensor" if backend == "torch" else "")
    raise TypeError(f"{where} is a {kind.__module__}.{kind.__qualname__}, not {allowed} (or a tuple of them): "
                    "return the array itself, not a subclass or an object that converts itself to one")


NUMPY_SCALARS = frozenset((np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8, np.uint8,
                           np.bool_))


def _torch_tensor():
    torch = sys.modules.get("torch")
    return torch.Tensor if torch is not None else None


def _autocast(state: str | None):
    if not state:
        return contextlib.nullcontext()
    import torch

    device, dtype = state.split(":")
    return torch.autocast(device_type=device, dtype=getattr(torch, dtype))


def _describe(exc: BaseException, fatal: bool) -> dict:
    cls = type(exc)
    try:
        message = str(exc)[:4000]
    except BaseException:  # noqa: BLE001
        message = "(its message could not be read)"
    try:
        text = "".join(traceback.format_exception_only(cls, exc))[-4000:]
    except BaseException:  # noqa: BLE001
        text = f"{cls.__name__}: {message}"
    builtin = [c.__name__ for c in cls.__mro__ if c.__module__ == "builtins"]
    described = {"type": str(cls.__name__)[:100], "builtin": builtin, "message": message, "text": text, "fatal": fatal}
    if isinstance(exc, OutOfScope):  # declared scope (harness/scope.py): the suite raises it again, with the reason
        try:
            described["out_of_scope"] = str(exc.reason)[:1000]
        except BaseException:  # noqa: BLE001
            described["out_of_scope"] = ""
    return described


def _read_key(fd: int) -> bytes:
    key = b""
    while len(key) < 32:
        chunk = os.read(fd, 32 - len(key))
        if not chunk:
            os._exit(4)
        key += chunk
    return key


def main(argv=None) -> None:
    p = argparse.ArgumentParser(prog="python -m spec_tests.sandbox.worker")
    p.add_argument("--in", dest="fd_in", type=int, required=True)
    p.add_argument("--out", dest="fd_out", type=int, required=True)
    p.add_argument("--generation", type=int, default=0)
    p.add_argument("--uid", type=int)
    p.add_argument("--gid", type=int)
    p.add_argument("--memory-mb", type=int, default=4096)
    p.add_argument("--cpu-seconds", type=int, default=600)
    p.add_argument("--file-mb", type=int, default=64)
    p.add_argument("--disk-mb", type=int, default=0, help="a private /tmp and /dev/shm of this size (root only)")
    p.add_argument("--banned", default="[]", help="JSON: the rubric's banned functions and modules")
    p.add_argument("--banned-ops", default="[]", help="JSON: the rubric's banned PyTorch operators")
    p.add_argument("--processes", type=int, default=64)
    p.add_argument("--extra-path", help="the implementation's own folder (readable, for its sibling modules)")
    p.add_argument("--stage", help="an empty folder for mount points (root only)")
    opts = p.parse_args(argv)
    key = _read_key(opts.fd_in)  # the suite's key for this worker's seals: the first 32 bytes it sends
    notes = confine(opts)
    from spec_tests.sandbox import guard

    guard.install(json.loads(opts.banned), json.loads(opts.banned_ops), key)  # before anything is imported
    del key  # held by the audit hook alone from now on
    Worker(opts.generation, notes).serve(opts.fd_in, opts.fd_out)
    os._exit(0)


if __name__ == "__main__":
    main()
