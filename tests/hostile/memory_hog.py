"""layer_norm tries to take 64 GB, a gigabyte at a time, touching every page."""
import numpy as np

from tests.hostile._honest import *  # noqa: F401,F403


def layer_norm(x, gamma, beta, eps=1e-5):
    hoard = []
    for _ in range(64):
        block = np.empty(2**30, dtype=np.uint8)
        block.fill(1)
        hoard.append(block)
    return correct_layer_norm(x, gamma, beta, eps)  # noqa: F405
