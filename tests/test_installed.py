"""The installed package carries its own pytest configuration (spec_tests/pytest_config.toml), the
same as the repository's pyproject.toml, and `mha-spec check` finds it; the wheel itself, installed in
a clean NumPy-only venv and run from a temporary folder, is CI's `.ci/installed.sh`."""

from __future__ import annotations

import tomllib

from spec_tests import __main__ as cli
from spec_tests.harness import rootdir
from tests.helpers import ROOT


def pytest_table(path):
    return tomllib.loads(path.read_text())["tool"]["pytest"]["ini_options"]


def test_packaged_configuration_equals_the_repositorys():
    assert pytest_table(rootdir.PACKAGED_INI) == pytest_table(ROOT / "pyproject.toml")


def test_packaged_configuration_ships_as_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert any(rootdir.PACKAGED_INI.match(f"spec_tests/{pattern}") for pattern in data["spec_tests"])


def test_check_uses_the_project_configuration_in_the_repository():
    args = cli.check_args("mine.py", ["-q"])
    assert args[args.index("-c") + 1] == str(ROOT / "pyproject.toml")
    assert args[args.index("--rootdir") + 1] == str(ROOT)
    assert args[-2:] == [str(ROOT / "spec_tests"), "-q"]


def test_console_script_is_declared():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["mha-spec"] == "spec_tests.__main__:console"
