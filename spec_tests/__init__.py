"""The executable specification of multi-head attention: chapters (test_*.py) and their harness."""

from spec_tests.harness.loader import load_impl

__all__ = ["load_impl"]
