"""The executable specification of multi-head attention: chapters (test_*.py) and their harness.

    from spec_tests import check
    check(globals(), chapter="masks")     # in a notebook: a chapter's claims against its own functions
"""

from spec_tests.harness.loader import load_impl
from spec_tests.harness.notebook import check
from spec_tests.harness.scope import OutOfScope  # an implementation's "I cannot express this input" (CONTRACT.md)

__all__ = ["OutOfScope", "check", "load_impl"]
