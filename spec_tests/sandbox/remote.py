"""An array of the implementation's backend that stays in the worker: the suite holds a handle to it.

What impl.native returns in the worker comes back to the suite as a RemoteArray (session.py makes
one for each handle in a reply); the few things a test may do with it (METHODS and ATTRIBUTES in
worker.py) are requests to the worker, made through the session it belongs to.
"""

from __future__ import annotations

import sys

from spec_tests.harness.subject import autocast_state
from spec_tests.sandbox import wire


class RemoteArray:
    """An array of the implementation's backend that stays in the worker (impl.native's result there)."""

    def __init__(self, session, handle: wire.Handle):  # session: the session.Session it belongs to
        self._session, self._handle = session, handle

    @property
    def dtype(self):
        """torch's dtype object when the test has torch at hand (`y.dtype == torch.float32`), else its name."""
        torch = sys.modules.get("torch")
        if torch is not None and self._session.description.get("backend") == "torch":
            return getattr(torch, self._handle.dtype, self._handle.dtype)
        return self._handle.dtype

    shape = property(lambda self: self._handle.shape)
    ndim = property(lambda self: len(self._handle.shape))

    def _ask(self, body: dict, what: str):
        subject = getattr(self._session, "subject", None)
        return self._session.request(subject, dict(body, target=self._handle, autocast=autocast_state()), what)

    def requires_grad_(self, flag: bool = True):
        return self._ask({"op": "method", "name": "requires_grad_", "args": [bool(flag)]}, "requires_grad_()")

    def sum(self):
        return self._ask({"op": "method", "name": "sum", "args": []}, "sum()")

    def backward(self):
        return self._ask({"op": "method", "name": "backward", "args": []}, "backward()")

    def detach(self):
        return self._ask({"op": "method", "name": "detach", "args": []}, "detach()")

    def __getitem__(self, key):
        return self._ask({"op": "method", "name": "__getitem__", "args": [key]}, "indexing")

    @property
    def requires_grad(self) -> bool:
        return bool(self._ask({"op": "attr", "name": "requires_grad"}, ".requires_grad"))

    @property
    def grad(self):
        return self._ask({"op": "attr", "name": "grad"}, ".grad")

    def __repr__(self) -> str:
        return f"RemoteArray({self._handle.dtype}, shape={self._handle.shape})"
