"""At import, empties PyTorch's mode stacks and replaces what it can find of the grader's watch
(sys.setprofile, sys.audit, the worker module's functions); in layer_norm it pops the modes again
with PyTorch's own functions, switches the call watch off, and uses F.layer_norm (banned)."""
import sys

import numpy as np
import torch
import torch.nn.functional as F

from tests.hostile._honest import *  # noqa: F401,F403

_pop_dispatch, _pop_function = torch._C._pop_torch_dispatch_stack, torch._C._pop_torch_function_stack
_setprofile = sys.setprofile
while torch._C._len_torch_dispatch_stack():
    _pop_dispatch(None)
while torch._C._len_torch_function_stack():
    _pop_function()
sys.setprofile = lambda *a, **k: None
sys.audit = lambda *a, **k: None
for _name in ("spec_tests.sandbox.guard", "__main__", "spec_tests.sandbox.worker"):
    _module = sys.modules.get(_name)
    if _module is not None:
        for _attr in ("watch", "install", "Banned"):
            if hasattr(_module, _attr):
                setattr(_module, _attr, (lambda audit, hits, fn, *a, **k: fn(*a, **k)) if _attr == "watch"
                        else (lambda *a, **k: None))


def layer_norm(x, gamma, beta, eps=1e-5):
    _setprofile(None)
    while torch._C._len_torch_dispatch_stack():
        _pop_dispatch(None)
    while torch._C._len_torch_function_stack():
        _pop_function()
    t = torch.from_numpy(np.asarray(x, dtype=np.float64))
    return F.layer_norm(t, [t.shape[-1]], torch.from_numpy(np.asarray(gamma, dtype=np.float64)),
                        torch.from_numpy(np.asarray(beta, dtype=np.float64)), eps).numpy()
