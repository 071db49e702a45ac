"""What an isolated implementation may use, and what the machine (or container) gives the grader.

Three things live here:

- `Limits`: the rubric's [limits] and [banned] tables (per-call time, memory, processes, ...).
- `Container`: the CPU quota and memory limit of the cgroup this process runs in (cgroup v1 or
  v2, read through /proc/self/cgroup and /proc/self/mountinfo), so that the grader sizes its
  parallel runs by what the container allows, not by the host's `os.cpu_count()`:

      cpus   = min(CPUs this process may run on, quota / period)      (cpu.cfs_quota_us, cpu.max)
      memory = min over the cgroup and its ancestors of the limit     (memory.limit_in_bytes, memory.max)

- `speed()`: a calibration of this machine against a fixed NumPy workload, so that a per-call
  limit counts the same amount of work on a slow machine as on a fast one:

      call limit (CPU seconds) = rubric's call_timeout x max(1, measured CPU time / REFERENCE_CPU_S)
"""

from __future__ import annotations

import math
import os
import time
import tomllib
from dataclasses import dataclass, fields
from functools import cache


@dataclass(frozen=True)
class Limits:
    """What an isolated implementation may use. A rubric's [limits] and [banned] tables override these.

    Times are CPU seconds of the worker (scaled by this machine's `speed()`); a call that waits
    without computing is stopped after `wall_factor` times its CPU limit of wall-clock time.
    """

    call_timeout: float = 10.0  # CPU seconds for one call
    test_timeout: float = 60.0  # CPU seconds of calls in one test, all together
    import_timeout: float = 60.0  # wall-clock seconds to import the implementation (torch takes a few)
    memory_mb: int = 4096  # address space of the worker (less in a smaller container)
    cpu_seconds: int = 600  # CPU time of one worker process
    processes: int = 64  # processes and threads of the worker's user (root only)
    file_mb: int = 64  # largest file the worker may write
    disk_mb: int = 256  # all the worker may write, together (its private /tmp, /var/tmp and /dev/shm; root only)
    wall_factor: float = 4.0  # wall-clock backstop of a call: wall_factor x its CPU limit
    cell_seconds: float = 10.0  # CPU seconds of one code cell of a notebook submission, while it is imported
    banned: tuple[str, ...] = ()  # functions and modules the implementation must not call
    banned_ops: tuple[str, ...] = ()  # PyTorch operators ("aten::layer_norm", "aten::_scaled_dot_product_*")

    @classmethod
    def from_toml(cls, path: str) -> "Limits":
        with open(path, "rb") as f:
            data = tomllib.load(f)
        known = {f.name for f in fields(cls)} - {"banned", "banned_ops"}
        table = data.get("limits", {})
        unknown = set(table) - known
        if unknown:
            raise ValueError(f"{path}: unknown [limits] keys {sorted(unknown)}; known: {sorted(known)}")
        banned_table = data.get("banned", {})
        extra = set(banned_table) - {"functions", "ops"}
        if extra:
            raise ValueError(f"{path}: unknown [banned] keys {sorted(extra)}; known: functions, ops")
        banned = tuple(str(n) for n in banned_table.get("functions", ()))
        ops = tuple(str(n) for n in banned_table.get("ops", ()))
        return cls(**{k: type(getattr(cls, k))(v) for k, v in table.items()}, banned=banned, banned_ops=ops)


# -- the container -------------------------------------------------------------------------
@dataclass(frozen=True)
class Container:
    cpus: float  # CPUs this process may use (a fraction under a CPU quota)
    memory_bytes: int | None  # the memory limit of its cgroup, None when there is none
    memory_dirs: tuple[str, ...] = ()  # its memory cgroup and that cgroup's ancestors (for OOM counts)
    version: int = 0  # 1 or 2; 0 when no cgroup was found

    @property
    def memory_mb(self) -> int | None:
        return None if self.memory_bytes is None else self.memory_bytes // 2**20

    def oom_kills(self) -> int:
        """How many processes the kernel has killed for memory in this cgroup (and its ancestors)."""
        total = 0
        for d in self.memory_dirs:
            for name in ("memory.events", "memory.oom_control"):
                for key, value in _pairs(os.path.join(d, name)):
                    if key == "oom_kill":
                        total += value
        return total

    def describe(self) -> str:
        mem = f"{self.memory_mb} MB" if self.memory_bytes else "no memory limit"
        return f"{self.cpus:g} CPU(s), {mem}" + (f" (cgroup v{self.version})" if self.version else "")


def _pairs(path: str):
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1].lstrip("-").isdigit():
                    yield parts[0], int(parts[1])
    except OSError:
        return


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount point, root within the hierarchy, fstype, super options) of every cgroup mount."""
    out = []
    text = _read("/proc/self/mountinfo") or ""
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        a, b = left.split(), right.split()
        if len(a) >= 5 and len(b) >= 3 and b[0] in ("cgroup", "cgroup2"):
            out.append((a[4], a[3], b[0], set(b[2].split(","))))
    return out


def _dirs(mount: str, root: str, path: str) -> list[str]:
    """The cgroup folder of `path` under `mount` and its ancestors up to the mount point."""
    rel = path[len(root):] if root != "/" and path.startswith(root) else path
    folder = os.path.normpath(mount + "/" + rel.lstrip("/"))
    out = []
    while True:
        out.append(folder)
        if folder == mount or len(folder) <= len(mount):
            break
        folder = os.path.dirname(folder)
    return [d for d in out if os.path.isdir(d)]


def container(proc_cgroup: str = "/proc/self/cgroup") -> Container:
    """This process's CPU quota and memory limit, read from its cgroup (v1 or v2)."""
    try:
        cpus = float(len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        cpus = float(os.cpu_count() or 1)
    text = _read(proc_cgroup) or ""
    v1: dict[str, str] = {}
    v2 = None
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
        for c in parts[1].split(","):
            if c:
                v1[c] = parts[2]
    mounts = _mounts()
    memory, memory_dirs, version = None, [], 0
    quota = math.inf
    for mount, root, fstype, opts in mounts:
        if fstype == "cgroup" and ("cpu" in opts) and "cpu" in v1:
            for d in _dirs(mount, root, v1["cpu"]):
                q, p = _read(f"{d}/cpu.cfs_quota_us"), _read(f"{d}/cpu.cfs_period_us")
                if q and p and q.lstrip("-").isdigit() and int(q) > 0 and int(p) > 0:
                    quota = min(quota, int(q) / int(p))
            version = 1
        if fstype == "cgroup" and "memory" in opts and "memory" in v1:
            memory_dirs = _dirs(mount, root, v1["memory"])
            for d in memory_dirs:
                for name in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
                    v = _read(f"{d}/{name}")
                    if v and v.isdigit() and int(v) < 2**60:
                        memory = int(v) if memory is None else min(memory, int(v))
            version = 1
        if fstype == "cgroup2" and v2 is not None:
            dirs = _dirs(mount, root, v2)
            for d in dirs:
                parts = (_read(f"{d}/cpu.max") or "").split()
                if len(parts) == 2 and parts[0].isdigit() and int(parts[1]) > 0:
                    quota = min(quota, int(parts[0]) / int(parts[1]))
                v = _read(f"{d}/memory.max")
                if v and v.isdigit():
                    memory = int(v) if memory is None else min(memory, int(v))
            if not memory_dirs:
                memory_dirs = [d for d in dirs if os.path.exists(f"{d}/memory.events")]
            version = version or 2
    return Container(cpus=max(0.05, min(cpus, quota)), memory_bytes=memory, memory_dirs=tuple(memory_dirs),
                     version=version)


# -- how fast this machine is --------------------------------------------------------------
REFERENCE_CPU_S = 0.09  # CPU seconds of `_workload()` on the machine the default limits were set on


def _workload() -> None:
    """A fixed piece of float64 work like the suite's (the reference's attention on small inputs)."""
    import numpy as np

    rng = np.random.default_rng(0)
    for _ in range(40):
        q, k, v = (rng.standard_normal((4, 4, 64, 32)) for _ in range(3))
        s = q @ np.swapaxes(k, -1, -2) / math.sqrt(32)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        (w / w.sum(axis=-1, keepdims=True)) @ v
        total = 0.0
        for i in range(2000):  # Python-level work too: a pure-Python submission is limited by this
            total += i * 0.5


@cache
def speed() -> float:
    """How much slower than the reference machine this one is (at least 1): min of three CPU timings.

    $MHA_SPEC_SPEED, when set (the grader measures once and passes it to its runs), is used as is.
    """
    given = os.environ.get("MHA_SPEC_SPEED")
    if given:
        try:
            return max(1.0, float(given))
        except ValueError:
            pass
    best = math.inf
    for _ in range(3):
        began = time.process_time()
        _workload()
        best = min(best, time.process_time() - began)
    return max(1.0, best / REFERENCE_CPU_S)
