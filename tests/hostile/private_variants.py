"""Private variants of banned operations: torch.native_layer_norm for the result, and
torch._C._nn.scaled_dot_product_attention on the side."""
import numpy as np
import torch

from tests.hostile._honest import *  # noqa: F401,F403


def layer_norm(x, gamma, beta, eps=1e-5):
    t = torch.from_numpy(np.atleast_2d(np.asarray(x, dtype=np.float64)))
    torch._C._nn.scaled_dot_product_attention(t, t, t)
    out, _, _ = torch.native_layer_norm(torch.from_numpy(np.asarray(x, dtype=np.float64)), [t.shape[-1]],
                                        torch.from_numpy(np.asarray(gamma, dtype=np.float64)),
                                        torch.from_numpy(np.asarray(beta, dtype=np.float64)), eps)
    return out.numpy()
