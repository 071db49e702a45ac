"""Prints 200 MB to stdout and to stderr while being imported, and 2 MB more at every layer_norm call.

Its functions are all correct: the flood must cost it nothing, and must not reach the grader's output.
"""
import os
import sys

from tests.hostile._honest import *  # noqa: F401,F403

_CHUNK = "flood " * (2**20 // 6)
for _ in range(100):
    print(_CHUNK)
    print(_CHUNK, file=sys.stderr)
sys.stdout.flush()
os.write(1, b"x" * 2**20)


def layer_norm(x, gamma, beta, eps=1e-5):
    print(_CHUNK, flush=True)
    print(_CHUNK, file=sys.stderr, flush=True)
    return correct_layer_norm(x, gamma, beta, eps)  # noqa: F405
