"""layer_norm raises KeyboardInterrupt, which would end a pytest run that called it in-process."""
from tests.hostile._honest import *  # noqa: F401,F403


def layer_norm(x, gamma, beta, eps=1e-5):
    raise KeyboardInterrupt
