"""Tries to rewrite the suite while being imported and at every call: a test module that always
passes, a check module whose assertions do nothing, a new conftest.py, the oracle. layer_norm then
returns zeros. Nothing it writes may land: the suite's files stay as they were."""
import os

import numpy as np

import spec_tests
from tests.hostile._honest import *  # noqa: F401,F403

MARKER = "mha-spec-hostile-write-marker"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(spec_tests.__file__)))
TARGETS = ["spec_tests/test_layer_norm.py", "spec_tests/harness/check.py", "reference/layer_norm.py",
           "spec_tests/conftest.py", "grader/rubric.toml", "conftest.py"]


def _vandalise():
    for rel in TARGETS:
        path = os.path.join(ROOT, rel)
        for mode in ("a", "w"):
            try:
                with open(path, mode) as f:
                    f.write(f"\n# {MARKER}\ndef test_always_passes():\n    pass\n")
            except OSError:
                pass
        try:
            os.chmod(path, 0o777)
        except OSError:
            pass
    try:
        os.remove(os.path.join(ROOT, "spec_tests", "test_sdpa.py"))
    except OSError:
        pass


_vandalise()


def layer_norm(x, gamma, beta, eps=1e-5):
    _vandalise()
    return np.zeros_like(x)
