"""layer_norm never returns: a busy loop (the per-call timeout must stop it)."""
from tests.hostile._honest import *  # noqa: F401,F403


def layer_norm(x, gamma, beta, eps=1e-5):
    n = 0
    while True:
        n += 1
