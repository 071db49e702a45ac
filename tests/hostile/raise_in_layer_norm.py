"""The honest twin of the entries that break layer_norm: it raises at once (the same code, no attack)."""
from tests.hostile._honest import *  # noqa: F401,F403


def layer_norm(x, gamma, beta, eps=1e-5):
    raise RuntimeError("layer_norm is not finished")
