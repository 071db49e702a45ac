"""What the grader derives from its own files, kept on disk between grading runs.

Each grading run is a process of its own (one per submission on Gradescope; one per student when an
instructor grades a folder run by run), and each derived the same things again from files that had not
changed: the copy check's fingerprints of the public sources (some 0.3 s of CPU) and the claims each chapter
module tests (some 0.1 s). `cached` keeps such a value in a file named by a hash of the files' contents,
so any change to them computes it afresh; nothing is trusted that the grader's own user did not write:

    folder   MHA_SPEC_CACHE_DIR, else $XDG_CACHE_HOME/mha-spec, else ~/.cache/mha-spec
    key      sha256 of (name, VERSION, each input file's relative path and bytes)
    entry    <name>-<key>.json, read only when it and its folder belong to this user and no one else may
             write to them (a submission's worker runs under another user when the grader runs as root)

Every failure to read or write the cache (no home, a read-only disk, a damaged entry) computes the value
instead: the cache changes how fast a result comes, never the result.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

VERSION = "1"  # raise when what a cached value means changes


def folder() -> Path:
    given = os.environ.get("MHA_SPEC_CACHE_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mha-spec"


def key(name: str, files: Iterable[Path], root: Path) -> str:
    digest = hashlib.sha256(f"{name}\0{VERSION}\0".encode())
    for path in files:
        shown = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        digest.update(shown.encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def _ours(path: Path) -> bool:
    """Owned by this process's user, and writable by no one else."""
    info = path.lstat()
    return (info.st_uid == os.getuid() and not stat.S_ISLNK(info.st_mode)
            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def cached(name: str, files: Iterable[Path], root: Path, compute: Callable[[], Any]) -> Any:
    """compute(), or the value it gave before for these files' contents (a JSON value)."""
    try:
        where = folder()
        entry = where / f"{name}-{key(name, sorted(files), root)}.json"
    except OSError:  # an input file could not be read: no key
        return compute()
    try:
        if entry.exists() and _ours(where) and _ours(entry):
            return json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass  # a damaged entry: computed and written again below
    value = compute()
    try:
        where.mkdir(mode=0o700, parents=True, exist_ok=True)
        if _ours(where):
            fd, temporary = tempfile.mkstemp(dir=where, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(value, out)
            os.replace(temporary, entry)
            for stale in where.glob(f"{name}-*.json"):  # an earlier version's value: never read again
                if stale != entry and _ours(stale):
                    stale.unlink(missing_ok=True)
    except OSError:
        pass
    return value
