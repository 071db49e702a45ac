"""Every test in this folder is a meta test: deselected when checking a chosen implementation."""

import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "spec_tests/meta/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.meta)


@pytest.fixture(scope="session")
def mutant_grades(tmp_path_factory):
    """grade(name) -> (exit code, output, folder): each known bug graded once in this session (all
    pytest-xdist workers share the results), for every test that needs its grade."""
    from spec_tests.meta.grading_helpers import grade_mutant, shared_folder

    shared = shared_folder(tmp_path_factory)
    return lambda name: grade_mutant(name, shared)
