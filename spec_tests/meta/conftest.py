"""Every test in this folder is a meta test: deselected when checking a chosen implementation."""

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "spec_tests/meta/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.meta)
