"""layer_norm returns an object that only becomes an array when the grader converts it: its __array__ (and,
should the grader ask PyTorch, __torch_function__) runs F.layer_norm, banned, after the watched call has
returned. Its twin is raise_in_layer_norm: a result that is not a plain array must fail as a raise does."""
import numpy as np
import torch
import torch.nn.functional as F

from tests.hostile._honest import *  # noqa: F401,F403


class _Later:
    def __init__(self, x, gamma, beta, eps):
        self.args = (x, gamma, beta, eps)
        self.shape, self.dtype = np.shape(x), np.float64

    def _value(self):
        x, gamma, beta, eps = (torch.from_numpy(np.asarray(a, dtype=np.float64)) if not isinstance(a, float) else a
                               for a in self.args)
        return F.layer_norm(x, [x.shape[-1]], gamma, beta, eps).numpy()

    def __array__(self, dtype=None, copy=None):
        return self._value() if dtype is None else self._value().astype(dtype)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return func(*[a._value() if isinstance(a, _Later) else a for a in args], **(kwargs or {}))


_Later.__module__ = "torch.lazy"  # so that a check by module name takes it for one of PyTorch's


def layer_norm(x, gamma, beta, eps=1e-5):
    return _Later(x, gamma, beta, eps)
