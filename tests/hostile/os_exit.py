"""layer_norm ends the process with exit status 0: a grader that trusts exit codes would give full marks."""
import os

from tests.hostile._honest import *  # noqa: F401,F403


def layer_norm(x, gamma, beta, eps=1e-5):
    os._exit(0)
