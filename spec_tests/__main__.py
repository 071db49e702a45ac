"""Command line: `mha-spec check PATH [pytest options]` and `mha-spec claims`
(also `python -m spec_tests check PATH ...`).

`check` runs the whole specification against one implementation, from any directory:
it is `pytest --impl PATH` with the suite's own folder as the test path and the suite's own
configuration (the repository's pyproject.toml, or the copy installed with the package).
PATH is a `.py` file, a Jupyter notebook (`.ipynb`), a stem under impls/ or a module name.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from spec_tests.harness import rootdir

HERE = Path(__file__).resolve().parent
USAGE = """usage: mha-spec check PATH [pytest options]   check an implementation (.py file or .ipynb notebook)
       mha-spec claims                        list the claims
(`python -m spec_tests ...` is the same command)"""


def check_args(target: str, extra: list[str]) -> list[str]:
    """The pytest command line of `check`: the suite's rootdir, configuration and folder."""
    if target.endswith((".py", ".ipynb")) or os.sep in target:
        target = str(Path(target).expanduser().resolve())
    config = rootdir.config_file()
    args = ["--rootdir", str(rootdir.ROOT), "-c", str(config)]
    cache = not any(a.replace(" ", "") in ("no:cacheprovider", "-pno:cacheprovider") for a in extra)
    if cache and config != rootdir.PROJECT_INI:  # installed: pytest's cache in the learner's folder, not site-packages
        args += ["-o", f"cache_dir={Path.cwd() / '.pytest_cache'}"]
    # `spec_tests` is imported before pytest starts (this module is in it): pytest's warning that it cannot
    # rewrite the package's asserts says nothing to a learner (the suite's messages do not rely on it)
    args += ["-W", "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning"]
    return [*args, "--impl", target, str(HERE), *extra]


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        print()
        print(USAGE)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "claims":
        from spec_tests.harness import claims

        for c in claims.catalogue().values():
            print(f"{c.id:<8} {c.chapter:<16} {c.summary}")
        return 0
    if cmd == "check" and rest:
        return int(pytest.main(check_args(rest[0], rest[1:])))
    print(f"unknown command {' '.join(argv)!r}; try `mha-spec --help`", file=sys.stderr)
    return 2


def console() -> int:
    """The `mha-spec` console script."""
    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
