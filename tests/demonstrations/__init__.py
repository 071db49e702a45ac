"""Demonstrations: tests whose verdict cannot depend on an implementation.

They check the suite's own reference algorithms (sliding window, Linformer, Performer, Reformer),
stored trained models, BatchNorm's behaviour and identities that hold by construction, to show a
claim of the textbook at work. They carry no implementation claim, earn no points and are no cell of
the conformance matrix: each is marked `demonstration("CLAIM-ID")` (`pytest tests/demonstrations` runs
them), and its `impl` is the float64 reference implementation (impls/reference.py).
"""

import pytest

demonstration = pytest.mark.demonstration
