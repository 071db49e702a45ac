"""layer_norm ignores SIGALRM, SIGTERM and SIGINT, cancels any alarm, and sleeps for an hour.

A grader that times calls out with signal.alarm in the process that runs them would wait forever.
"""
import signal
import time

from tests.hostile._honest import *  # noqa: F401,F403

for _sig in (signal.SIGALRM, signal.SIGTERM, signal.SIGINT):
    signal.signal(_sig, signal.SIG_IGN)


def layer_norm(x, gamma, beta, eps=1e-5):
    signal.alarm(0)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM, signal.SIGTERM, signal.SIGINT])
    time.sleep(3600)
