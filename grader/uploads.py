"""Uploads as students make them: which file of a submission is graded.

A submission is whatever a student uploaded: one `.py` file of any name, a Jupyter notebook
(`.ipynb`: its code cells, read with nbformat, spec_tests/harness/notebook.py), a folder, a `.zip`
(often holding a folder), or several files where one imports helpers from the others
(`import helpers`, `from .helpers import f`). The graded module is the one that defines the
most of the contract's functions (docs/contract.md), at the top level of the file:

    score(file) = number of contract function names defined by `def` (or assigned) in the file

Test files of the student's own (`test_*.py`, `*_test.py`, `conftest.py`) and editor or archive
debris (`__MACOSX/`, `.hidden`, `__pycache__/`) are never graded. Ties go to `attention.py`,
`submission.py`, `mha.py`, then to the file nearest the top of the folder. The learner is told
which file was graded ("Graded `hw3/attention.py`").

Staging copies the submission into the grader's work folder. When the graded file uses relative
imports, its folder becomes a package (`_submission`) and the grader imports a small entry file
that loads it as `_submission.<module>`, so `from .helpers import f` works as it does for the
student.
"""

from __future__ import annotations

import ast
import os
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from spec_tests.harness import notebook
from spec_tests.harness.loader import CONTRACT_FUNCTIONS

ENTRY_NAMES = ("attention.py", "submission.py", "mha.py")  # preferred among files that tie
EXTENSION_FUNCTIONS = ("rotary_embedding", "t5_relative_position_bucket", "layer_norm_backward",
                       "scaled_dot_product_attention_backward")
FUNCTIONS = CONTRACT_FUNCTIONS + EXTENSION_FUNCTIONS
MAX_FILES = 200  # files in one upload
MAX_BYTES = 20 * 2**20  # unpacked size of one upload
PACKAGE = "_submission"


class SubmissionError(Exception):
    """The upload holds nothing the grader can run; the message says what it holds."""


@dataclass
class Staged:
    entry: Path  # the file the suite imports (--impl)
    shown: str  # the graded file, relative to the upload, as the learner names it
    name: str  # the submission's name (file stem, folder or archive name)
    candidates: list[str] = field(default_factory=list)  # the other .py files considered
    notes: list[str] = field(default_factory=list)


def _skipped(rel: PurePosixPath) -> bool:
    parts = rel.parts
    return any(p.startswith(".") or p in ("__pycache__", "__MACOSX") for p in parts)


def _is_test(rel: PurePosixPath) -> bool:
    name = rel.name
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py" or "tests" in rel.parts[:-1]


def defined_functions(source: str) -> set[str] | None:
    """The contract functions a module defines at its top level; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in FUNCTIONS:
            found.add(node.name)
        elif isinstance(node, ast.Assign):
            found |= {t.id for t in node.targets if isinstance(t, ast.Name) and t.id in FUNCTIONS}
        elif isinstance(node, ast.ImportFrom):
            found |= {a.asname or a.name for a in node.names if (a.asname or a.name) in FUNCTIONS}
    return found


def _uses_relative_imports(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(n, ast.ImportFrom) and n.level > 0 for n in ast.walk(tree))


SOURCES = (".py", ".ipynb")  # a module, or a Jupyter notebook (its code cells: spec_tests/harness/notebook.py)


def source_of(path: Path) -> str:
    """The Python a file holds: a .py file's text, a notebook's code cells."""
    if path.suffix == ".ipynb":
        try:
            return notebook.python_source(path)
        except ValueError:
            return ""
    return path.read_text(errors="replace")


def python_files(folder: Path) -> list[PurePosixPath]:
    out = []
    for path in sorted(p for p in folder.rglob("*") if p.suffix in SOURCES):
        rel = PurePosixPath(path.relative_to(folder).as_posix())
        if path.is_file() and not path.is_symlink() and not _skipped(rel):
            out.append(rel)
    return out


def choose(folder: Path) -> tuple[PurePosixPath, list[PurePosixPath]]:
    """The file of `folder` to grade, and the other candidates (for the learner's note)."""
    files = python_files(folder)
    if not files:
        raise SubmissionError(f"the upload holds no .py file (it holds: {_listing(folder)})")
    candidates = [f for f in files if not _is_test(f)] or files
    if len(candidates) == 1:
        return candidates[0], []
    scored = []
    for rel in candidates:
        found = defined_functions(source_of(folder / rel))
        scored.append((len(found) if found is not None else -1, rel))
    best = max(n for n, _ in scored)
    if best > 0:
        top = [r for n, r in scored if n == best]
    else:  # no file defines a function of the contract: one that does not parse (its error is the
        # feedback), or one with a usual name, or say what the upload holds
        broken = [r for n, r in scored if n < 0]
        top = broken if len(broken) == 1 else [r for _, r in scored if r.name in ENTRY_NAMES]
        if not top:
            raise SubmissionError(
                "no file of the upload defines a function of the contract "
                f"({', '.join(CONTRACT_FUNCTIONS[:3])}, ...); files: {', '.join(map(str, candidates))}")
    top.sort(key=lambda r: (r.name not in ENTRY_NAMES,
                            ENTRY_NAMES.index(r.name) if r.name in ENTRY_NAMES else 0, len(r.parts), str(r)))
    return top[0], [r for r in candidates if r != top[0]]


def _listing(folder: Path) -> str:
    names = [p.relative_to(folder).as_posix() for p in sorted(folder.rglob("*")) if p.is_file()][:10]
    return ", ".join(names) or "nothing"


def unzip(archive: Path, target: Path) -> None:
    """Extract a zip safely: no absolute paths, no '..', no links, bounded size and count."""
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise SubmissionError(f"{archive.name} is not a zip archive the grader can open: {exc}") from None
    with zf:
        members = [m for m in zf.infolist() if not m.is_dir()]
        if len(members) > MAX_FILES:
            raise SubmissionError(f"{archive.name} holds {len(members)} files; at most {MAX_FILES} are accepted")
        if sum(m.file_size for m in members) > MAX_BYTES:
            raise SubmissionError(f"{archive.name} unpacks to more than {MAX_BYTES // 2**20} MB")
        for m in members:
            rel = PurePosixPath(m.filename.replace("\\", "/"))
            if rel.is_absolute() or ".." in rel.parts or stat.S_ISLNK(m.external_attr >> 16):
                continue  # never written outside the target, never a link
            dest = target.joinpath(*rel.parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(m) as src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out)


def _copy(submission: Path, target: Path) -> None:
    if submission.is_dir():
        shutil.copytree(submission, target, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", ".*", "__MACOSX"))
        for path in sorted(target.rglob("*"), reverse=True):  # links are never followed out of the upload
            if path.is_symlink():
                path.unlink()
        zips = [p for p in target.iterdir() if p.suffix == ".zip" and p.is_file()]
        if not python_files(target) and len(zips) == 1:  # Gradescope: a zip uploaded as it is
            unzip(zips[0], target)
    elif submission.suffix == ".zip":
        target.mkdir()
        unzip(submission, target)
    elif submission.suffix in SOURCES:
        target.mkdir()
        shutil.copyfile(submission, target / submission.name)
    else:
        raise SubmissionError(f"{submission.name} is neither a .py file, a Jupyter notebook (.ipynb), "
                              "a .zip archive nor a folder")


def stage(submission: Path, workdir: Path) -> Staged:
    """Copy the upload to workdir/submission (readable by the worker's user) and choose the graded file."""
    submission = Path(submission)
    if not submission.exists():
        raise SubmissionError(f"no such file or folder: {submission}")
    name = submission.stem if submission.is_file() else submission.name
    target = workdir / "submission"
    _copy(submission, target)
    rel, others = choose(target)
    staged = Staged(entry=target.joinpath(*rel.parts), shown=str(rel), name=name,
                    candidates=[str(o) for o in others])
    if others:
        staged.notes.append(f"the upload holds other .py files too ({', '.join(f'`{o}`' for o in others[:8])}); "
                            "the graded one is the file that defines the most functions of the contract")
    if staged.entry.suffix == ".py" and _uses_relative_imports(staged.entry.read_text(errors="replace")):
        staged.entry = _as_package(target, rel)
    for folder, _, files in os.walk(target):
        os.chmod(folder, 0o755)
        for f in files:
            os.chmod(os.path.join(folder, f), 0o644)
    os.chmod(workdir, 0o755)
    return staged


def _as_package(target: Path, rel: PurePosixPath) -> Path:
    """Move the graded file's folder into a package and return an entry file that imports it from there."""
    home = target.joinpath(*rel.parts[:-1])
    package = target / ".pkg" / PACKAGE
    shutil.copytree(home, package, ignore=shutil.ignore_patterns(".pkg"))
    for folder in [package, *[p for p in package.rglob("*") if p.is_dir()]]:
        init = folder / "__init__.py"
        if not init.exists():
            init.write_text("")
    module = ".".join((PACKAGE, *PurePosixPath(rel.name).with_suffix("").parts))
    entry = target / ".pkg" / f"{rel.stem}.py"
    entry.write_text(
        f'"""The graded file `{rel}`, imported as part of its folder (it uses relative imports)."""\n'
        "import importlib as _importlib\n\n"
        f"_module = _importlib.import_module({module!r})\n"
        "globals().update({_k: _v for _k, _v in vars(_module).items() if not _k.startswith('__')})\n")
    return entry
