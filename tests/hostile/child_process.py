"""layer_norm leaves processes behind: a child in a session of its own, and a double-forked daemon.

Both sleep for ten minutes with MARKER on their command line; the grader must end them. The
functions are all correct, so the grade is the full one.
"""
import os
import subprocess
import sys

from tests.hostile._honest import *  # noqa: F401,F403

MARKER = "mha-spec-hostile-child-marker"
SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)", MARKER]
_started = []


def _daemon():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(SLEEPER[0], SLEEPER)
        os._exit(0)


def layer_norm(x, gamma, beta, eps=1e-5):
    if not _started:
        _started.append(subprocess.Popen(SLEEPER, start_new_session=True, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        _daemon()
    return correct_layer_norm(x, gamma, beta, eps)  # noqa: F405
