"""Every test in this folder is a demonstration: a meta test, out of the default run."""

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "spec_tests/demonstrations/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.meta)
