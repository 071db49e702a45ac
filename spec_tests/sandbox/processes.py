"""Finding and ending the processes a worker leaves behind (the suite's side of `--isolate`).

Each worker gets its own process group and, under root, a user id of its own (identity.py);
ending a worker kills the group, then every process of that user (which catches grandchildren
that called setsid), or, without root, every process that carries the worker's token in its
environment. This process is a child subreaper, so orphans come back to it and are reaped here.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time

PR_SET_CHILD_SUBREAPER = 36
_SUBREAPER = False


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def become_subreaper() -> None:
    global _SUBREAPER
    if not _SUBREAPER:
        try:
            _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):  # not Linux: orphans go to init, the token sweep still finds them
            pass
        _SUBREAPER = True


def proc_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, real uid, state) for every process we can see."""
    table = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                status = f.read()
        except OSError:
            continue
        fields_ = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        try:
            table[int(entry)] = (int(fields_["PPid"]), int(fields_["Uid"].split()[0]), fields_["State"].split()[0])
        except (KeyError, ValueError, IndexError):
            continue
    return table


def _environ_has(pid: int, token: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"MHA_SPEC_WORKER_TOKEN={token}".encode() in f.read().split(b"\0")
    except OSError:
        return False


def kill_user(uid: int, gid: int) -> None:
    """SIGKILL every process of `uid` (root only): a forked helper becomes uid and kills -1, until no
    process of uid is left (some kernels, gVisor's among them, report success when kill(-1) reached none)."""
    if not processes_of(uid=uid):
        return
    pid = os.fork()
    if pid == 0:  # the helper: only system calls and /proc reads from here on
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            for _ in range(200):
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    break
                if not processes_of(uid=uid):  # itself excluded
                    break
                time.sleep(0.005)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def kill_token(token: str) -> list[int]:
    """SIGKILL every process that carries the worker token (without root); returns their pids."""
    killed = []
    for _ in range(50):
        left = processes_of(token=token)
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        killed += left
        time.sleep(0.005)
    return killed


def reap_orphans(uid: int | None, killed: list[int]) -> None:
    """Orphans come back to this process (a child subreaper): reap the ones that were a worker's."""
    me = os.getpid()
    for pid, (ppid, puid, state) in proc_table().items():
        if ppid == me and state == "Z" and (puid == uid or pid in killed):
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def processes_of(uid: int | None = None, token: str | None = None) -> list[int]:
    """Live (not zombie) processes of a worker user, or carrying a worker token."""
    me = os.getpid()
    out = []
    for pid, (_, puid, state) in proc_table().items():
        if pid == me or state == "Z":
            continue
        if (uid is not None and puid == uid) or (token is not None and _environ_has(pid, token)):
            out.append(pid)
    return out


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) a process has used so far."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields_ = f.read().rsplit(")", 1)[1].split()
        return (int(fields_[11]) + int(fields_[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def runnable(pid: int) -> bool:
    """Whether any thread of the process is running or waiting for a CPU (state R)."""
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "R":
                    return True
    except (OSError, IndexError):
        return False
    return False


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


WRITABLE = ("/tmp", "/var/tmp", "/dev/shm")  # where any user may write


def _devices(pid) -> dict[str, str]:
    """mount point -> the device of the topmost mount there (major:minor), from /proc/PID/mountinfo."""
    found = {}
    with open(f"/proc/{pid}/mountinfo") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 4:
                found[parts[4]] = parts[2]
    return found


def private_tmp(pid: int) -> bool:
    """Whether the worker `pid` sees /tmp, /var/tmp and /dev/shm as one tmpfs of its own (worker._private_tmp),
    read from outside, in /proc/PID/mountinfo (the worker's own word is not taken for it)."""
    try:
        theirs, ours = _devices(pid), _devices("self")
    except OSError:
        return False
    tops = [t for t in WRITABLE if os.path.isdir(t)]
    devices = {theirs.get(t) for t in tops}
    return len(devices) == 1 and None not in devices and not devices & {ours.get(t) for t in tops}


def remove_files_of(uid: int, tops=WRITABLE) -> int:
    """Delete every file and folder owned by `uid` under `tops` (not following links); returns how many."""
    removed = 0
    for top in tops:
        for folder, dirs, files in os.walk(top, topdown=False):
            for name in files + dirs:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                    if st.st_uid != uid:
                        continue
                    if os.path.isdir(path) and not os.path.islink(path):
                        import shutil

                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        os.unlink(path)
                    removed += 1
                except OSError:
                    continue
    return removed
