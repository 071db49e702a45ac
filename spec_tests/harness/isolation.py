"""`--isolate`: run the implementation in a separate, confined worker process (always on when grading).

The suite's side of it. The implementation is never imported here: a worker process
(`spec_tests/harness/worker.py`) imports it, under limits, in a scratch working directory and,
when the suite runs as root, as an unprivileged user with the suite read-only and no network.
This process sends it inputs, reads back outputs (JSON and raw array bytes only, never a
pickle: `wire.py`), and does all the comparing, so the worker never holds an expected value.

    trusted (pytest, oracle, checks)  --inputs-->  worker (the implementation)
                                      <--outputs--

A call that does not return within the per-call timeout, a worker that dies (killed by a
limit, `os._exit`, a segfault) or that raises SystemExit/KeyboardInterrupt fails the test that
made the call, with a message that says what happened; the worker is restarted for the next
call. One worker serves every test while it lives, so a call costs a pipe round trip.

Nothing is left running: each worker gets its own process group and, under root, a user id of
its own; ending a worker kills the group, then every process of that user (which catches
grandchildren that called setsid), or, without root, every descendant this process can find
(it is a child subreaper, so orphans come back to it).
"""

from __future__ import annotations

import atexit
import ctypes
import fcntl
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import dataclass, field, fields

import numpy as np
import pytest

from spec_tests.harness import arrays, feedback, wire
from spec_tests.harness.context import current
from spec_tests.harness.loader import IMPLS_DIR, Implementation
from spec_tests.harness.subject import Call, NotImplementedYet, Subject, _remember, autocast_state

PR_SET_CHILD_SUBREAPER = 36
UID_RANGE = range(61000, 61400)  # unprivileged user ids for workers (no account needed)
LOCK_DIR = "/tmp/mha-spec-worker-uids"
SCRATCH_PREFIX = "mha-spec-worker-"  # the worker's scratch folder; its copy of the implementation is in impl/


@dataclass(frozen=True)
class Limits:
    """What an isolated implementation may use. A rubric's [limits] and [banned] tables override these."""

    call_timeout: float = 10.0  # seconds for one call
    test_timeout: float = 60.0  # seconds of calls in one test, all together
    import_timeout: float = 60.0  # seconds to import the implementation (torch takes a few)
    memory_mb: int = 4096  # address space of the worker
    cpu_seconds: int = 600  # CPU time of one worker process
    processes: int = 64  # processes and threads of the worker's user (root only)
    file_mb: int = 64  # largest file the worker may write
    banned: tuple[str, ...] = ()  # functions and modules the implementation must not call

    @classmethod
    def from_toml(cls, path: str) -> "Limits":
        with open(path, "rb") as f:
            data = tomllib.load(f)
        known = {f.name for f in fields(cls)} - {"banned"}
        table = data.get("limits", {})
        unknown = set(table) - known
        if unknown:
            raise ValueError(f"{path}: unknown [limits] keys {sorted(unknown)}; known: {sorted(known)}")
        banned = tuple(data.get("banned", {}).get("functions", ()))
        return cls(**{k: type(getattr(cls, k))(v) for k, v in table.items()}, banned=banned)


class IsolationFailure(BaseException):
    """The worker hung, died, or broke the rules during a call: this test fails, at once.

    A BaseException, so that Hypothesis does not retry and shrink (each retry could hang
    again); pytest reports it as this test's failure and goes on with the next test.
    """


class LoadError(Exception):
    """The implementation could not be imported in the worker."""


class SubmissionError(Exception):
    """An exception the implementation raised in the worker (re-raised here under its name)."""


_REMOTE_TYPES: dict[str, type] = {}


def _remote_exception(err: dict) -> BaseException:
    builtin = err.get("builtin") or []
    message = str(err.get("message", ""))
    if "NotImplementedError" in builtin:
        return NotImplementedError(message)
    if "ValueError" in builtin:
        return ValueError(message)
    name = re.sub(r"\W", "_", str(err.get("type") or "Exception"))[:60] or "Exception"
    if name not in _REMOTE_TYPES:
        _REMOTE_TYPES[name] = type(name, (SubmissionError,), {"__module__": "builtins"})
    return _REMOTE_TYPES[name](message)


# -- processes -----------------------------------------------------------------------------
def _libc():
    return ctypes.CDLL(None, use_errno=True)


_SUBREAPER = False


def _become_subreaper() -> None:
    global _SUBREAPER
    if not _SUBREAPER:
        try:
            _libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):  # not Linux: orphans go to init, the token sweep still finds them
            pass
        _SUBREAPER = True


def _proc_table() -> dict[int, tuple[int, int, str]]:
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


def _kill_user(uid: int, gid: int) -> None:
    """SIGKILL every process of `uid` (root only): a forked helper becomes uid and kills -1."""
    pid = os.fork()
    if pid == 0:  # the helper: only system calls from here on
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            for _ in range(200):
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    break
                time.sleep(0.005)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _reap(pids) -> None:
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def processes_of(uid: int | None = None, token: str | None = None) -> list[int]:
    """Live (not zombie) processes of a worker user, or carrying a worker token."""
    me = os.getpid()
    out = []
    for pid, (_, puid, state) in _proc_table().items():
        if pid == me or state == "Z":
            continue
        if (uid is not None and puid == uid) or (token is not None and _environ_has(pid, token)):
            out.append(pid)
    return out


# -- user ids ------------------------------------------------------------------------------
class _Identity:
    """An unprivileged uid/gid that no other worker of any suite on this machine uses now."""

    def __init__(self):
        os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
        start = os.getpid() % len(UID_RANGE)
        for i in range(len(UID_RANGE)):
            uid = UID_RANGE[(start + i) % len(UID_RANGE)]
            fd = os.open(os.path.join(LOCK_DIR, f"{uid}.lock"), os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid = self.gid = uid
            self._fd = fd
            _kill_user(uid, uid)  # whatever a crashed run of another suite left behind
            return
        raise RuntimeError(f"no free worker user id in {UID_RANGE}")

    def release(self) -> None:
        os.close(self._fd)


# -- one worker process --------------------------------------------------------------------
@dataclass
class Stats:
    started: int = 0
    restarts: int = 0
    pids: list = field(default_factory=list)
    cpu_seconds: float = 0.0  # of the workers, read just before each is stopped


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields_ = f.read().rsplit(")", 1)[1].split()
        return (int(fields_[11]) + int(fields_[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class Session:
    """One implementation's worker: started on demand, restarted after a failure."""

    def __init__(self, spec: str, limits: Limits):
        self.spec, self.limits = spec, limits
        self.root = os.geteuid() == 0
        self.identity = _Identity() if self.root else None
        _become_subreaper()
        self.token = secrets.token_hex(8)
        self.scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
        self.worker_spec, self.extra_path, self.path = self._stage(spec)
        self.proc: subprocess.Popen | None = None
        self.generation = 0
        self.stats = Stats()
        self.description: dict | None = None
        self.test: str | None = None
        self.test_used = 0.0
        self.reset_handles = False
        if self.identity:
            os.chown(self.scratch, self.identity.uid, self.identity.gid)
        _SESSIONS.append(self)
        if threading.current_thread() is threading.main_thread() and not _SESSIONS[1:]:
            signal.signal(signal.SIGTERM, _terminated)  # a grader stopping this run: end the workers too

    def _stage(self, spec: str):
        """The implementation as the worker imports it: a file is copied into the scratch folder."""
        expanded = os.path.expanduser(spec)
        if expanded.endswith(".py") or os.sep in expanded:
            src = os.path.realpath(expanded)
            if not os.path.isfile(src):
                raise FileNotFoundError(f"--impl {spec}: no such file {src}")
            folder = os.path.join(self.scratch, "impl")
            os.makedirs(folder)
            dst = os.path.join(folder, os.path.basename(src))
            shutil.copyfile(src, dst)
            os.chmod(folder, 0o755)
            os.chmod(dst, 0o644)
            return dst, os.path.dirname(src), src
        if (IMPLS_DIR / f"{spec}.py").is_file():
            return spec, None, str(IMPLS_DIR / f"{spec}.py")
        return spec, None, None

    # -- lifecycle ------------------------------------------------------------------------
    def _spawn(self) -> None:
        self.generation += 1
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        cmd = [sys.executable, "-s", "-B", "-m", "spec_tests.harness.worker", "--in", str(req_r),
               "--out", str(resp_w), "--generation", str(self.generation),
               "--memory-mb", str(self.limits.memory_mb), "--cpu-seconds", str(self.limits.cpu_seconds),
               "--file-mb", str(self.limits.file_mb), "--processes", str(self.limits.processes)]
        if self.extra_path:
            cmd += ["--extra-path", self.extra_path]
        if self.identity:
            stage = os.path.join(self.scratch, f".stage{self.generation}")
            os.mkdir(stage, 0o700)
            cmd += ["--uid", str(self.identity.uid), "--gid", str(self.identity.gid), "--stage", stage]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": self.scratch,
               "TMPDIR": self.scratch, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1", "MHA_SPEC_TORCH_THREADS": "1", "MHA_SPEC_WORKER_TOKEN": self.token}
        for name in ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH"):
            if name in os.environ:
                env[name] = os.environ[name]
        debug = os.environ.get("MHA_SPEC_WORKER_DEBUG")  # a file for the worker's own stderr
        try:
            self.proc = subprocess.Popen(cmd, pass_fds=(req_r, resp_w), cwd=self.scratch, env=env,
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=open(debug, "ab") if debug else subprocess.DEVNULL,
                                         start_new_session=True)
        finally:
            os.close(req_r)
            os.close(resp_w)
        self.fd_out, self.fd_in = req_w, resp_r
        os.set_blocking(self.fd_out, False)
        os.set_blocking(self.fd_in, False)
        self.stats.started += 1
        self.stats.pids.append(self.proc.pid)
        self.reset_handles = False

    def stop(self) -> None:
        """Kill the worker's process group and everything its user or token still runs."""
        proc, self.proc = self.proc, None
        if proc is not None:
            self.stats.cpu_seconds += _cpu_seconds(proc.pid)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            for fd in (self.fd_in, self.fd_out):
                try:
                    os.close(fd)
                except OSError:
                    pass
        killed = []
        if self.identity:
            _kill_user(self.identity.uid, self.identity.gid)
        else:
            for _ in range(50):
                left = processes_of(token=self.token)
                if not left:
                    break
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                killed += left
                time.sleep(0.005)
        if proc is not None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        # Orphans come back to this process (a child subreaper): reap the ones that were the worker's.
        me, uid = os.getpid(), self.identity.uid if self.identity else None
        _reap([pid for pid, (ppid, puid, state) in _proc_table().items()
               if ppid == me and state == "Z" and (puid == uid or pid in killed)])

    def close(self) -> None:
        self.stop()
        if self.identity:
            self.identity.release()
            self.identity = None
        shutil.rmtree(self.scratch, ignore_errors=True)

    # -- requests -------------------------------------------------------------------------
    def _exchange(self, body: dict, timeout: float):
        """Send one request and wait for its reply; raise _Died if the worker fails to answer."""
        deadline = time.monotonic() + timeout
        if self.reset_handles:
            body = dict(body, reset=True)
            self.reset_handles = False
        try:
            wire.write(self.fd_out, wire.encode(body), deadline)
        except wire.Closed:  # it had ended before this request (between two tests, say)
            self.stop()
            raise _Gone() from None
        except wire.Timeout:
            self.stop()
            raise _Died(f"did not read its input within {timeout:g} s") from None
        try:
            payload = wire.read(self.fd_in, deadline)
            reply = wire.decode(payload, handle=lambda h: RemoteArray(self, h))
            if not isinstance(reply, dict) or not ({"ok", "error"} & set(reply)):
                raise wire.WireError("a reply without a result or an error")
            return reply
        except wire.Timeout:
            self.stop()
            raise _Died(f"did not return within {timeout:g} s") from None
        except wire.WireError as exc:
            try:  # the pipe closes a moment before the process is gone: wait for its exit status
                code = self.proc.wait(timeout=2) if self.proc else None
            except subprocess.TimeoutExpired:
                code = None
            self.stop()
            raise _Died(_death(code, exc)) from None

    def start(self) -> dict:
        """Start a worker, have it import the implementation, and return what it declares."""
        self._spawn()
        try:
            reply = self._exchange({"op": "load", "spec": self.worker_spec, "banned": list(self.limits.banned),
                                    "extra_path": self.extra_path}, self.limits.import_timeout)
        except _Died as exc:
            raise LoadError(f"importing the implementation in the isolated worker failed: it {exc}") from None
        if "error" in reply:
            self.stop()
            raise LoadError(str(reply["error"].get("text") or reply["error"].get("message")).strip())
        self.description = reply["ok"]
        return self.description

    def request(self, subject, body: dict, what: str):
        """One call into the implementation, for the current test; returns the reply's "ok" value."""
        nodeid = current().nodeid
        if nodeid != self.test:
            self.test, self.test_used = nodeid, 0.0
            self.reset_handles = True
        left = self.limits.test_timeout - self.test_used
        if left <= 0:
            raise _failure(subject, what, f"this test's calls have used up their {self.limits.test_timeout:g} s "
                                          "(the rubric's test_timeout)")
        for attempt in (1, 2):
            if self.proc is None:  # stopped after a failure: a fresh worker for this call
                self._restart(subject, what, nodeid)
            timeout = min(self.limits.call_timeout, left)
            began = time.monotonic()
            try:
                reply = self._exchange(body, timeout)
                break
            except _Gone:
                if attempt == 2:
                    raise _failure(subject, what, "the worker ended before the call began, twice") from None
            except _Died as exc:
                limit = ("the per-call limit" if timeout == self.limits.call_timeout else
                         "what was left of this test's time")
                detail = f"{exc} ({limit})" if "did not return" in str(exc) else str(exc)
                raise _failure(subject, what, f"the call {detail}; the worker was stopped and is restarted "
                                              "for the next call") from None
            finally:
                self.test_used += time.monotonic() - began
        if reply.get("banned"):
            names = ", ".join(str(b) for b in reply["banned"])
            raise _failure(subject, what, f"the call used {names}, which the rubric does not allow: this claim "
                                          "must be implemented without it")
        if "error" in reply:
            err = reply["error"]
            if err.get("fatal"):
                self.stop()
                raise _failure(subject, what, f"the implementation raised {err.get('type')}"
                                              f"{': ' + str(err.get('message')) if err.get('message') else ''} "
                                              "(a function must return or raise an Exception, not stop the "
                                              "process); the worker is restarted for the next call")
            raise _remote_exception(err)
        return reply["ok"]

    def _restart(self, subject, what: str, nodeid: str) -> None:
        self.stats.restarts += 1
        try:
            self.start()
        except LoadError as exc:
            raise _failure(subject, what, f"the worker could not be restarted: {exc}") from None
        self.test, self.reset_handles = nodeid, False


class _Died(Exception):
    pass


class _Gone(Exception):
    """The worker had already ended when a request was sent."""


def _death(code, exc) -> str:
    if code is None:
        return f"broke off its answer ({exc})"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        hint = {"SIGKILL": " (killed: out of CPU time or memory, or by the system)",
                "SIGXCPU": " (its CPU time limit)", "SIGSEGV": " (a crash in native code)",
                "SIGXFSZ": " (it wrote a file over the size limit)"}.get(name, "")
        return f"ended the worker process by signal {name}{hint}"
    return f"ended the worker process with exit code {code} (os._exit, or a crash)"


def _failure(subject, what: str, problem: str) -> IsolationFailure:
    lines = feedback.header(subject)
    lines.append(f"  check: {what} in the isolated worker")
    lines.append(f"  problem: {problem}")
    lines += feedback.footer()
    return IsolationFailure("\n".join(lines))


def _describe_call(fname: str, args, kwargs) -> str:
    parts = [feedback.describe(a) for a in args] + [f"{k}={feedback.describe(v)}" for k, v in kwargs.items()]
    return f"{fname}({', '.join(parts)})"


_SESSIONS: list[Session] = []


def shutdown() -> None:
    """End every worker this process started (plugin's pytest_unconfigure, and at exit)."""
    while _SESSIONS:
        _SESSIONS.pop().close()


atexit.register(shutdown)


def _terminated(signum, frame):
    shutdown()
    os._exit(128 + signum)


def summary() -> list[str]:
    return [f"isolation: {s.path or s.spec}: {s.stats.started} worker start(s), {s.stats.restarts} restart(s), "
            f"{s.stats.cpu_seconds + (_cpu_seconds(s.proc.pid) if s.proc else 0.0):.1f} s of worker CPU, "
            f"worker pids {s.stats.pids}" for s in _SESSIONS]


# -- what the plugin uses ------------------------------------------------------------------
def load(spec: str, limits: Limits) -> Implementation:
    """Like loader.load, but the module is imported only in a worker; the suite gets its declarations."""
    session = Session(spec, limits)
    try:
        d = session.start()
    except BaseException:
        session.close()
        _SESSIONS.remove(session) if session in _SESSIONS else None
        raise
    impl = Implementation(name=str(d["name"]), spec=spec, module=None, backend=str(d["backend"]),
                          device=str(d["device"]), dtypes=tuple(str(x) for x in d["dtypes"]),
                          unavailable=d.get("unavailable"), path=session.path, notes=list(d.get("notes") or []),
                          contract=tuple(d["contract"]) if d.get("contract") else None, flash=bool(d.get("flash")))
    impl.remote = session
    return impl


class RemoteArray:
    """An array of the implementation's backend that stays in the worker (impl.native's result there)."""

    def __init__(self, session: Session, handle: wire.Handle):
        self._session, self._handle = session, handle

    @property
    def dtype(self):
        """torch's dtype object when the test has torch at hand (`y.dtype == torch.float32`), else its name."""
        torch = sys.modules.get("torch")
        if torch is not None and self._session.description.get("backend") == "torch":
            return getattr(torch, self._handle.dtype, self._handle.dtype)
        return self._handle.dtype

    shape = property(lambda self: self._handle.shape)
    ndim = property(lambda self: len(self._handle.shape))

    def _ask(self, body: dict, what: str):
        subject = getattr(self._session, "subject", None)
        return self._session.request(subject, dict(body, target=self._handle, autocast=autocast_state()), what)

    def requires_grad_(self, flag: bool = True):
        return self._ask({"op": "method", "name": "requires_grad_", "args": [bool(flag)]}, "requires_grad_()")

    def sum(self):
        return self._ask({"op": "method", "name": "sum", "args": []}, "sum()")

    def backward(self):
        return self._ask({"op": "method", "name": "backward", "args": []}, "backward()")

    def detach(self):
        return self._ask({"op": "method", "name": "detach", "args": []}, "detach()")

    def __getitem__(self, key):
        return self._ask({"op": "method", "name": "__getitem__", "args": [key]}, "indexing")

    @property
    def requires_grad(self) -> bool:
        return bool(self._ask({"op": "attr", "name": "requires_grad"}, ".requires_grad"))

    @property
    def grad(self):
        return self._ask({"op": "attr", "name": "grad"}, ".grad")

    def __repr__(self) -> str:
        return f"RemoteArray({self._handle.dtype}, shape={self._handle.shape})"


def _contains(value, leaf) -> bool:
    """Does `value` (arrays, tuples, lists, dicts) hold a leaf for which leaf(x) is true?"""
    if isinstance(value, (tuple, list)):
        return any(_contains(v, leaf) for v in value)
    if isinstance(value, dict):
        return any(_contains(v, leaf) for v in value.values())
    return leaf(value)


def _has_remote(value) -> bool:
    return _contains(value, lambda x: isinstance(x, RemoteArray))


def _has_arrays(value) -> bool:
    return _contains(value, lambda x: isinstance(x, np.ndarray) or arrays.is_native(x))


def _handles(value):
    if isinstance(value, RemoteArray):
        return value._handle
    if isinstance(value, (tuple, list)):
        return type(value)(_handles(v) for v in value)
    if isinstance(value, dict):
        return {k: _handles(v) for k, v in value.items()}
    return value


class IsolatedSubject(Subject):
    """A Subject whose implementation runs in a worker: same interface, calls go over the wire."""

    def __init__(self, impl: Implementation, dtype: str):
        super().__init__(impl, dtype)
        self.session: Session = impl.remote

    def _keywords_of(self, fname):
        functions = self.session.description["functions"]
        return fname in functions, functions.get(fname)

    def has(self, fname: str, *keywords: str) -> bool:
        present, accepted = self._keywords_of(fname)
        return present and (accepted is None or all(k in accepted for k in keywords))

    def function(self, fname: str, *keywords: str):
        present, accepted = self._keywords_of(fname)
        self.require(fname, keywords, present, accepted)
        return lambda *args, **kwargs: self.call_native(fname, *args, **kwargs)

    def _request(self, body: dict, what: str, fname: str | None = None):
        self.session.subject = self
        try:
            return self.session.request(self, body, what)
        except NotImplementedError as exc:
            if fname is not None:
                text = str(exc)
                self._unimplemented[fname] = (text if fname in text else
                                              f"{fname}: {text or 'raises NotImplementedError'}")
                raise NotImplementedYet(self._unimplemented[fname], fname) from None
            raise NotImplementedYet(str(exc) or "raises NotImplementedError") from None

    def native(self, x):
        if not _has_arrays(x):
            return x
        return self._request({"op": "native", "dtype": self.dtype, "value": x}, "converting the inputs")

    def to_numpy(self, y):
        if not _has_remote(y):
            return super().to_numpy(y)
        return self._request({"op": "get", "value": _handles(y)}, "reading an array back")

    def call_native(self, fname: str, *args, **kwargs):
        self.function(fname, *kwargs)
        call = self._record(Call(self, fname, (), {}, native=True, autocast=autocast_state()))
        try:
            reply = self._request({"op": "call_native", "fname": fname, "args": _handles(args),
                                   "kwargs": _handles(kwargs), "autocast": call.autocast}, f"{fname}(...)", fname)
        except Exception as exc:
            self._raised(call, exc)
            raise
        (call.args, call.kwargs), call.after = reply["before"], reply["after"]
        call.result, call.seen_dtype = reply["values"], reply.get("dtype")
        return reply["result"]

    def call(self, fname: str, *args, **kwargs):
        call = self._record(Call(self, fname, args, kwargs))
        self.function(fname, *kwargs)
        try:
            reply = self._request({"op": "call", "fname": fname, "dtype": self.dtype, "args": args,
                                   "kwargs": kwargs}, _describe_call(fname, args, kwargs), fname)
        except Exception as exc:
            self._raised(call, exc)
            raise
        call.seen_dtype = reply.get("dtype")
        out = reply["result"]
        call.result = out
        _remember(out, call)
        return out

