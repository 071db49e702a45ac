"""Unprivileged user ids for workers (root only): one per worker, locked so no other suite uses it."""

from __future__ import annotations

import fcntl
import os

from spec_tests.sandbox.processes import kill_user

UID_RANGE = range(61000, 61400)  # unprivileged user ids for workers (no account needed)
LOCK_DIR = "/tmp/mha-spec-worker-uids"


class Identity:
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
            kill_user(uid, uid)  # whatever a crashed run of another suite left behind
            return
        raise RuntimeError(f"no free worker user id in {UID_RANGE}")

    def release(self) -> None:
        os.close(self._fd)
