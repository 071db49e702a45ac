"""Registers the suite's pytest plugin (spec_tests/plugin.py).

Once the project is installed (`pip install -e .`), the plugin is also a `pytest11`
entry point with this same name, and this line does nothing more; the entry point
is what makes `pytest --impl ~/path/outside/the/repo.py` work.
"""

pytest_plugins = ["spec_tests.plugin"]
