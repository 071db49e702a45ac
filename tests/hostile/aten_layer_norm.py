"""layer_norm through the operator's alias, torch.ops.aten.layer_norm, which the rubric's ban on
torch.nn.functional.layer_norm covers: banned where it runs, whatever name reached it."""
import numpy as np
import torch

from tests.hostile._honest import *  # noqa: F401,F403


def layer_norm(x, gamma, beta, eps=1e-5):
    t = torch.from_numpy(np.asarray(x, dtype=np.float64))
    out = torch.ops.aten.layer_norm(t, [t.shape[-1]], torch.from_numpy(np.asarray(gamma, dtype=np.float64)),
                                    torch.from_numpy(np.asarray(beta, dtype=np.float64)), eps)
    return out.numpy()
