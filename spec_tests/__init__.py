"""The executable specification of multi-head attention: chapters (test_*.py) and their harness.

    from spec_tests import check
    check(globals(), chapter="masks")     # in a notebook: a chapter's claims against its own functions
"""

from spec_tests.harness import packages

packages.install()  # before anything imports reference/ or impls/: a learner's reference.py cannot stand in for them

from spec_tests.harness.loader import load_impl  # noqa: E402
from spec_tests.harness.notebook import check  # noqa: E402
from spec_tests.harness.scope import OutOfScope  # noqa: E402 - an implementation's "I cannot express this input" (CONTRACT.md)

__all__ = ["OutOfScope", "check", "load_impl"]
