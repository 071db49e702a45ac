"""One implementation's worker process, seen from the suite: start, requests, limits, stop.

A request is one call into the implementation. Its limit counts the worker's CPU time, not the
wall clock, so a busy or slow machine does not cost a learner points:

    CPU limit  = call_timeout x speed()     (speed: this machine against the reference machine)
    wait limit = CPU limit x wall_factor / min(1, CPU share)     (time the worker waits: not runnable,
                                                                   no CPU used; a sleep, a blocked read)
    wall cap   = WALL_CAP x the wait limit                        (a loaded machine starving the worker)

A call that passes either limit, a worker that dies (killed by a limit, `os._exit`, a crash) or
that raises SystemExit/KeyboardInterrupt fails the test that made the call, with a message that
says what happened; the worker is restarted for the next call. A function that has once run
past its limit is not called again: its remaining tests fail at once, saying why, so one
hanging function costs its own claims and a bounded amount of time.

A worker killed by the container for memory (the cgroup's OOM count rose) is the grading
machine's fault, not the submission's: the call is tried once more in a fresh worker, and only
if that one is killed too does the call fail.
"""

from __future__ import annotations

import hmac
import json
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
from dataclasses import dataclass, field
from pathlib import Path

from spec_tests.harness import feedback, scope
from spec_tests.sandbox import guard, limits as limits_mod, processes, wire
from spec_tests.harness.context import current
from spec_tests.sandbox.identity import Identity
from spec_tests.sandbox.limits import Limits
from spec_tests.sandbox.remote import RemoteArray
from spec_tests.harness.loader import IMPLS_DIR

SCRATCH_PREFIX = "mha-spec-worker-"  # the worker's scratch folder; its copy of the implementation is in impl/
SUITE_ROOT = str(Path(__file__).resolve().parents[2])  # the worker imports this suite, not another copy
WALL_CAP = 5  # a call that computes but is starved of CPU still ends after WALL_CAP x its waiting limit


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
    if isinstance(err.get("out_of_scope"), str):  # declared scope: the same exception as in-process, its reason kept
        return scope.OutOfScope(err["out_of_scope"])
    if "NotImplementedError" in builtin:
        return NotImplementedError(message)
    if "ValueError" in builtin:
        return ValueError(message)
    name = re.sub(r"\W", "_", str(err.get("type") or "Exception"))[:60] or "Exception"
    if name not in _REMOTE_TYPES:
        _REMOTE_TYPES[name] = type(name, (SubmissionError,), {"__module__": "builtins"})
    return _REMOTE_TYPES[name](message)


@dataclass
class Stats:
    started: int = 0
    restarts: int = 0
    pids: list = field(default_factory=list)
    cpu_seconds: float = 0.0  # of the workers, read just before each is stopped
    peak_rss_mb: float = 0.0  # the largest resident size a worker reached
    oom_retries: int = 0  # calls tried again after the container killed the worker for memory


class _Died(Exception):
    def __init__(self, message: str = "", timed_out: bool = False, oom: bool = False):
        super().__init__(message)
        self.timed_out, self.oom = timed_out, oom


class _Gone(Exception):
    """The worker had already ended when a request was sent."""


class _OverLimit(wire.Timeout):
    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def cpu_share() -> float:
    """The CPUs one grading run may use: $MHA_SPEC_CPU_SHARE (set by the grader), else the container's."""
    try:
        return max(0.05, float(os.environ["MHA_SPEC_CPU_SHARE"]))
    except (KeyError, ValueError):
        return limits_mod.container().cpus


class Session:
    """One implementation's worker: started on demand, restarted after a failure."""

    def __init__(self, spec: str, limits: Limits):
        self.spec, self.limits = spec, limits
        self.root = os.geteuid() == 0
        self.identity = Identity() if self.root else None
        processes.become_subreaper()
        self.container = limits_mod.container()
        self.speed = limits_mod.speed()
        self.share = cpu_share()
        self.token = secrets.token_hex(8)
        self.scratch = tempfile.mkdtemp(prefix=SCRATCH_PREFIX)
        self.worker_spec, self.extra_path, self.path = self._stage(spec)
        self.proc: subprocess.Popen | None = None
        self.generation = 0
        self.stats = Stats()
        self.description: dict | None = None
        self.test: str | None = None
        self.test_used = 0.0  # CPU seconds of this test's calls
        self.reset_handles = False
        self.stopped: dict[str, str] = {}  # function -> why it is no longer called
        self.sweep = False  # a worker ran without a private /tmp: what its user wrote there is deleted at the end
        self.review: dict[str, str] = {}  # tampering seen (for a person to review) -> the test that saw it
        if self.identity:
            os.chown(self.scratch, self.identity.uid, self.identity.gid)
        _SESSIONS.append(self)
        if threading.current_thread() is threading.main_thread() and not _SESSIONS[1:]:
            signal.signal(signal.SIGTERM, _terminated)  # a grader stopping this run: end the workers too

    # -- limits ---------------------------------------------------------------------------
    @property
    def call_cpu(self) -> float:
        return self.limits.call_timeout * self.speed

    @property
    def test_cpu(self) -> float:
        return self.limits.test_timeout * self.speed

    def wall_for(self, cpu: float) -> float:
        return cpu * self.limits.wall_factor / min(1.0, self.share)

    def memory_mb(self) -> int:
        """The worker's address-space limit: the rubric's, less in a container with less memory.

        Address space is larger than resident memory (PyTorch alone maps ~700 MB for ~230 MB
        resident), so the container's limit plus that slack is the most the worker may map.
        """
        mb = self.limits.memory_mb
        if self.container.memory_mb:
            mb = min(mb, self.container.memory_mb + 1024)
        return mb

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
        self.key = secrets.token_bytes(32)  # this worker's key for the seals of its calls (guard.seal)
        cmd = [sys.executable, "-s", "-B", "-m", "spec_tests.sandbox.worker", "--in", str(req_r),
               "--out", str(resp_w), "--generation", str(self.generation),
               "--memory-mb", str(self.memory_mb()), "--cpu-seconds", str(self.limits.cpu_seconds),
               "--file-mb", str(self.limits.file_mb), "--processes", str(self.limits.processes),
               "--disk-mb", str(self.limits.disk_mb), "--banned", json.dumps(list(self.limits.banned)),
               "--banned-ops", json.dumps(list(self.limits.banned_ops))]
        if self.extra_path:
            cmd += ["--extra-path", self.extra_path]
        if self.identity:
            stage = os.path.join(self.scratch, f".stage{self.generation}")
            os.mkdir(stage, 0o700)
            cmd += ["--uid", str(self.identity.uid), "--gid", str(self.identity.gid), "--stage", stage]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": self.scratch,
               "TMPDIR": self.scratch, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1", "MHA_SPEC_TORCH_THREADS": "1", "MHA_SPEC_WORKER_TOKEN": self.token,
               "MHA_SPEC_CELL_SECONDS": f"{self.limits.cell_seconds:g}",  # harness/notebook.py: a cell's CPU time
               "PYTHONPATH": SUITE_ROOT}
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
        os.write(req_w, self.key)  # the first thing the worker reads, before it imports anything
        self.fd_out, self.fd_in = req_w, resp_r
        os.set_blocking(self.fd_out, False)
        os.set_blocking(self.fd_in, False)
        self.stats.started += 1
        self.stats.pids.append(self.proc.pid)
        self.reset_handles = False
        self.oom_seen = self.container.oom_kills()

    def stop(self) -> None:
        """Kill the worker's process group and everything its user or token still runs."""
        proc, self.proc = self.proc, None
        if proc is not None:
            self.stats.cpu_seconds += processes.cpu_seconds(proc.pid)
            self.stats.peak_rss_mb = max(self.stats.peak_rss_mb, processes.rss_mb(proc.pid))
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
            processes.kill_user(self.identity.uid, self.identity.gid)
        else:
            killed = processes.kill_token(self.token)
        if proc is not None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        processes.reap_orphans(self.identity.uid if self.identity else None, killed)
        if self.identity and self.sweep:  # no private /tmp: nothing the worker's user wrote may stay
            processes.remove_files_of(self.identity.uid)
            self.sweep = False

    def close(self) -> None:
        self.stop()
        if self.identity:
            self.identity.release()
            self.identity = None
        shutil.rmtree(self.scratch, ignore_errors=True)

    # -- requests -------------------------------------------------------------------------
    def _exchange(self, body: dict, wall: float, cpu: float | None = None):
        """Send one request and wait for its reply within `wall` seconds and `cpu` CPU seconds of the
        worker; raise _Died if the worker fails to answer. Returns (reply, CPU seconds used)."""
        began = time.monotonic()
        deadline = began + (wall if cpu is None else wall * WALL_CAP)
        pid = self.proc.pid
        cpu0 = processes.cpu_seconds(pid)
        if self.reset_handles:
            body = dict(body, reset=True)
            self.reset_handles = False
        last = {"cpu": cpu0, "at": began, "waited": 0.0}

        def check():
            """CPU time over the limit, or `wall` seconds spent waiting (not runnable, no CPU used)."""
            used, now = processes.cpu_seconds(pid), time.monotonic()
            if used - cpu0 > cpu:
                raise _OverLimit(f"used {cpu:.3g} s of CPU time without returning")
            if used == last["cpu"] and not processes.runnable(pid):
                last["waited"] += now - last["at"]
                if last["waited"] > wall:
                    raise _OverLimit(f"waited {wall:.3g} s without computing or returning (sleeping, or "
                                     "blocked on something)")
            last["cpu"], last["at"] = used, now

        try:
            wire.write(self.fd_out, wire.encode(body), deadline)
        except wire.Closed:  # it had ended before this request (between two tests, say)
            self.stop()
            raise _Gone() from None
        except wire.Timeout:
            self.stop()
            raise _Died(f"did not read its input within {wall:.3g} s") from None
        try:
            payload = wire.read(self.fd_in, deadline, check=check if cpu is not None else None)
            used = processes.cpu_seconds(pid) - cpu0
            reply = wire.decode(payload, handle=lambda h: RemoteArray(self, h))
            if not isinstance(reply, dict) or not ({"ok", "error"} & set(reply)):
                raise wire.WireError("a reply without a result or an error")
            return reply, used
        except _OverLimit as exc:
            self.stop()
            raise _Died(exc.why, timed_out=True) from None
        except wire.Timeout:
            self.stop()
            raise _Died(f"did not return within {deadline - began:.3g} s of wall-clock time"
                        + (" (the machine gave it too little CPU time to finish)" if cpu is not None else ""),
                        timed_out=True) from None
        except wire.WireError as exc:
            try:  # the pipe closes a moment before the process is gone: wait for its exit status
                code = self.proc.wait(timeout=2) if self.proc else None
            except subprocess.TimeoutExpired:
                code = None
            oom = code == -signal.SIGKILL and self.container.oom_kills() > self.oom_seen
            self.stop()
            raise _Died(_death(code, exc, oom), oom=oom) from None

    def start(self) -> dict:
        """Start a worker, have it import the implementation, and return what it declares."""
        self._spawn()
        try:
            reply, _ = self._exchange({"op": "load", "spec": self.worker_spec, "banned": list(self.limits.banned),
                                       "banned_ops": list(self.limits.banned_ops),
                                       "extra_path": self.extra_path}, self.limits.import_timeout)
        except _Died as exc:
            raise LoadError(f"importing the implementation in the isolated worker failed: it {exc}") from None
        if self.identity and not processes.private_tmp(self.proc.pid):
            self.sweep = True
        for note in reply.get("review") or []:
            self.flag(str(note), "the import")
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
        fname = body.get("fname")
        if fname in self.stopped:
            raise _failure(subject, what, f"not called: {self.stopped[fname]}. After a function has run past its "
                                          "time limit once, the grader does not call it again, so its remaining "
                                          "tests fail without running")
        left = self.test_cpu - self.test_used
        if left <= 0:
            raise _failure(subject, what, f"this test's calls have used up their {self.test_cpu:.3g} s of CPU time "
                                          "(the rubric's test_timeout)")
        sealed = body.get("op") in SEALED
        if sealed:
            body = dict(body, nonce=secrets.token_hex(8))
        oom_tries = 0
        attempt = 0
        while True:
            attempt += 1
            if self.proc is None:  # stopped after a failure: a fresh worker for this call
                self._restart(subject, what, nodeid)
            cpu = min(self.call_cpu, left)
            try:
                reply, used = self._exchange(body, self.wall_for(cpu), cpu)
                self.test_used += used
                break
            except _Gone:
                if attempt >= 2:
                    raise _failure(subject, what, "the worker ended before the call began, twice") from None
            except _Died as exc:
                self.test_used += cpu if exc.timed_out else 0.0
                if exc.oom and oom_tries == 0:  # the container's fault: once more, in a fresh worker
                    oom_tries += 1
                    self.stats.oom_retries += 1
                    continue
                limit = ("the per-call limit" if cpu == self.call_cpu else "what was left of this test's time")
                detail = f"{exc} ({limit})" if exc.timed_out else str(exc)
                if exc.timed_out and fname:
                    self.stopped[fname] = f"{fname}() {exc} in an earlier call ({limit}, in {nodeid.split('/')[-1]})"
                raise _failure(subject, what, f"the call {detail}; the worker was stopped and is restarted "
                                              "for the next call") from None
        if sealed:
            reply["banned"] = self._unseal(body, reply)
        notes = [str(b)[len(guard.REVIEW):] for b in reply.get("banned") or [] if str(b).startswith(guard.REVIEW)]
        notes += [str(n) for n in reply.get("review") or [] if isinstance(n, str)]
        reply["banned"] = [b for b in reply.get("banned") or [] if not str(b).startswith(guard.REVIEW)]
        marker = "tampering with the grader: "
        for note in notes + [str(b)[len(marker):] for b in reply["banned"] if str(b).startswith(marker)]:
            self.flag(note, nodeid)
        if reply.get("banned"):
            tamper = [str(b)[len(marker):] for b in reply["banned"] if str(b).startswith(marker)]
            used = [str(b) for b in reply["banned"] if not str(b).startswith(marker)]
            problems = []
            if used:
                problems.append(f"the call used {', '.join(used)}, which the rubric does not allow: this claim "
                                "must be implemented without it")
            if tamper:
                problems.append(f"the call was tampering with the grader's watch on banned operations "
                                f"({'; '.join(tamper)}): a submission must leave the grader's watch alone")
            raise _failure(subject, what, "; ".join(problems))
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

    def flag(self, note: str, nodeid: str) -> None:
        """Mark the submission for review: what the grader saw it do to the grader (kept once, with the test)."""
        note = note[:300]
        if note not in self.review and len(self.review) < 20:
            self.review[note] = nodeid.split("/")[-1]

    def _unseal(self, body: dict, reply: dict) -> list:
        """The watch's report of a sealed call, its seal checked: made with this worker's key, over this request's
        nonce, the report and the values that came back. A call without a valid seal was not watched as the
        worker claims (the watch bypassed, or the report or result changed on its way back): tampering."""
        report = [str(b) for b in reply.get("banned") or []]
        seals = [r for r in report if r.startswith(guard.SEAL)]
        report = [r for r in report if not r.startswith(guard.SEAL)]
        ok = reply.get("ok")
        if "error" in reply:
            values = None
        elif body["op"] == "call":
            values = ok.get("result") if isinstance(ok, dict) else None
        elif body["op"] == "call_native":
            values = (ok.get("values"), ok.get("after")) if isinstance(ok, dict) else None
        else:
            values = None
        try:
            expected = guard.seal(self.key, body["nonce"], report, _unremote(values))
        except Exception:  # noqa: BLE001 - values that cannot be sealed were not sealed either
            expected = None
        if len(seals) != 1 or expected is None or not hmac.compare_digest(seals[0], expected):
            report.append("tampering with the grader: the grader's watch did not see this call as it was made, or "
                          "what it saw was changed on its way back (a call of the grader's watch bypassed, or its "
                          "report or result replaced)")
        return report

    def _restart(self, subject, what: str, nodeid: str) -> None:
        self.stats.restarts += 1
        try:
            self.start()
        except LoadError as exc:
            raise _failure(subject, what, f"the worker could not be restarted: {exc}") from None
        self.test, self.reset_handles = nodeid, False


SEALED = {"call", "call_native", "bench", "method"}  # requests that run the implementation's code: their reports are sealed


def _unremote(value):
    """A decoded reply's value as the worker sealed it (handles are not sealed: values only)."""
    if isinstance(value, RemoteArray):
        return None
    if isinstance(value, (tuple, list)):
        return type(value)(_unremote(v) for v in value)
    if isinstance(value, dict):
        return {k: _unremote(v) for k, v in value.items()}
    return value


def _death(code, exc, oom: bool = False) -> str:
    if code is None:
        return f"broke off its answer ({exc})"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
        if oom:
            return ("ended the worker process by signal SIGKILL: the grading machine ran out of memory "
                    "(its container's limit), twice, so the call needed more memory than the grader can give it")
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


_SESSIONS: list[Session] = []


def shutdown() -> None:
    """End every worker this process started (plugin's pytest_unconfigure, and at exit)."""
    while _SESSIONS:
        _SESSIONS.pop().close()


def forget(session: Session) -> None:
    """Drop a session from those shutdown() and summary() know (one that failed to start, once closed)."""
    if session in _SESSIONS:
        _SESSIONS.remove(session)


def _terminated(signum, frame):
    shutdown()
    os._exit(128 + signum)


REVIEW_LINE = "isolation: review: "  # a summary line the grader reads: the submission is marked for review


def summary() -> list[str]:
    out = []
    for s in _SESSIONS:
        out += [f"{REVIEW_LINE}{note} (in {test})" for note, test in s.review.items()]
        rss = max(s.stats.peak_rss_mb, processes.rss_mb(s.proc.pid) if s.proc else 0.0)
        out.append(f"isolation: {s.path or s.spec}: {s.stats.started} worker start(s), {s.stats.restarts} "
                   f"restart(s), {s.stats.cpu_seconds + (processes.cpu_seconds(s.proc.pid) if s.proc else 0.0):.1f}"
                   f" s of worker CPU, peak worker memory {rss:.0f} MB, per-call limit {s.call_cpu:.3g} s of CPU "
                   f"(speed {s.speed:.2f}), {s.stats.oom_retries} retr(ies) after the container ran out of memory, "
                   f"worker uid {s.identity.uid if s.identity else None}, worker pids {s.stats.pids}")
    return out
