"""The files a reader of the site downloads from the site itself: docs/downloads/.

    docs/downloads/template.py      impls/template.py, the learner's starting point
    docs/downloads/CONTRACT.txt     CONTRACT.md (a .md under docs/ would become a page; the link's
                                    `download="CONTRACT.md"` saves it under its own name)

Copies of the repository's files, written by `python -m docs_gen` and compared by --check, so that the
built site, offline or opened from disk, carries them; the chapters' notebooks are docs_gen/notebooks.py.
"""

from __future__ import annotations

from pathlib import Path

from docs_gen import DOCS, ROOT

OUT = DOCS / "downloads"
FILES = {"template.py": ROOT / "impls" / "template.py", "CONTRACT.txt": ROOT / "CONTRACT.md"}


def outputs() -> dict[Path, str]:
    return {OUT / name: source.read_text(encoding="utf-8") for name, source in FILES.items()}
