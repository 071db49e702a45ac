"""layer_norm raises SystemExit(0)."""
import sys

from tests.hostile._honest import *  # noqa: F401,F403


def layer_norm(x, gamma, beta, eps=1e-5):
    sys.exit(0)
