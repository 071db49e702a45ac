"""layer_norm is the suite's own oracle (reference.layer_norm): the rubric bans calling it."""
import reference

from tests.hostile._honest import *  # noqa: F401,F403


def layer_norm(x, gamma, beta, eps=1e-5):
    return reference.layer_norm(x, gamma, beta, eps)
