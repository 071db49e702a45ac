"""Command line: `python -m spec_tests check PATH [pytest options]` and `python -m spec_tests claims`.

`check` runs the whole specification against one implementation, from any directory:
it is `pytest --impl PATH` with the suite's own folder as the test path.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        print("\nusage: python -m spec_tests check PATH [pytest options]   check an implementation")
        print("       python -m spec_tests claims                        list the claims")
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "claims":
        from spec_tests.harness import claims

        for c in claims.catalogue().values():
            print(f"{c.id:<8} {c.chapter:<16} {c.summary}")
        return 0
    if cmd == "check" and rest:
        target, extra = rest[0], rest[1:]
        if target.endswith(".py") or os.sep in target:
            target = str(Path(target).expanduser().resolve())
        return int(pytest.main(["--rootdir", str(HERE.parent), "-c", str(HERE.parent / "pyproject.toml"),
                                "--impl", target, str(HERE), *extra]))
    print(f"unknown command {' '.join(argv)!r}; try `python -m spec_tests --help`", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
