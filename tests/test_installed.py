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


def test_the_wheel_installs_one_top_level_name_holding_every_package():
    """pyproject.toml lists every package of the repository: spec_tests' own, and reference/, impls/, grader/,
    adapters/ under spec_tests.bundled (spec_tests/harness/packages.py finds them there by their own names)."""
    from spec_tests.harness import packages

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed, mapped = set(tool["packages"]), tool["package-dir"]
    assert {name.split(".")[0] for name in listed} == {"spec_tests"}
    expected = set()
    for top in packages.NAMES:
        for init in sorted((ROOT / top).rglob("__init__.py")):
            if "__pycache__" in init.parts or "build" in init.relative_to(ROOT).parts:
                continue
            dotted = ".".join(init.parent.relative_to(ROOT).parts)
            expected.add(dotted if top == "spec_tests" else f"spec_tests.bundled.{dotted}")
    assert listed == expected, f"missing from pyproject.toml: {sorted(expected - listed)}; " \
                               f"not a package: {sorted(listed - expected)}"
    assert mapped == {f"spec_tests.bundled.{top}": top for top in packages.NAMES if top != "spec_tests"}
