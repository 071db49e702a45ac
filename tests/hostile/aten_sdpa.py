"""Calls torch.ops.aten.scaled_dot_product_attention (the operator behind the banned
F.scaled_dot_product_attention) inside layer_norm, then returns the correct result."""
import numpy as np
import torch

from tests.hostile._honest import *  # noqa: F401,F403
from tests.hostile._honest import correct_layer_norm


def layer_norm(x, gamma, beta, eps=1e-5):
    t = torch.from_numpy(np.atleast_2d(np.asarray(x, dtype=np.float64)))
    torch.ops.aten.scaled_dot_product_attention(t, t, t)
    return correct_layer_norm(x, gamma, beta, eps)
