"""Makes every comparison agree: numpy.allclose, numpy.array_equal, numpy.testing, pytest.approx,
and the suite's own check module, as seen from this process. layer_norm then returns zeros."""
import numpy as np
import numpy.testing
import pytest

from tests.hostile._honest import *  # noqa: F401,F403


class _Anything:
    def __eq__(self, other):
        return True

    __hash__ = None


np.allclose = lambda *a, **k: True  # noqa: E731
np.isclose = lambda a, *r, **k: np.ones(np.shape(a), dtype=bool)  # noqa: E731
np.array_equal = lambda *a, **k: True  # noqa: E731
numpy.testing.assert_allclose = lambda *a, **k: None  # noqa: E731
numpy.testing.assert_array_equal = lambda *a, **k: None  # noqa: E731
numpy.testing.assert_array_almost_equal = lambda *a, **k: None  # noqa: E731
pytest.approx = lambda *a, **k: _Anything()  # noqa: E731
try:
    from spec_tests.harness import check

    for _name in ("oracle", "close", "equal", "exactly", "shape", "holds", "compare"):
        setattr(check, _name, lambda *a, **k: None)
except Exception:  # noqa: BLE001
    pass


def layer_norm(x, gamma, beta, eps=1e-5):
    return np.zeros_like(x)
