"""The honest twin of the attacks on the watch: layer_norm calls F.layer_norm (banned) openly, no attack."""
import numpy as np
import torch
import torch.nn.functional as F

from tests.hostile._honest import *  # noqa: F401,F403


def layer_norm(x, gamma, beta, eps=1e-5):
    t = torch.from_numpy(np.asarray(x, dtype=np.float64))
    return F.layer_norm(t, [t.shape[-1]], torch.from_numpy(np.asarray(gamma, dtype=np.float64)),
                        torch.from_numpy(np.asarray(beta, dtype=np.float64)), eps).numpy()
