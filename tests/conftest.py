"""The suite's own tests (`pytest tests`): the grader, the failure messages, the docs generator, the
known bugs. Nothing here is shipped with the specification or collected by a learner's run."""

import pytest


@pytest.fixture(scope="session")
def mutant_grades(tmp_path_factory):
    """grade(name) -> (exit code, output, folder): each known bug graded once in this session (all
    pytest-xdist workers share the results), for every test that needs its grade."""
    from tests.grading_helpers import grade_mutant, shared_folder

    shared = shared_folder(tmp_path_factory)
    return lambda name: grade_mutant(name, shared)
