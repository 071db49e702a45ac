"""A Jupyter notebook as an implementation: `--impl hw.ipynb`, `mha-spec check hw.ipynb`, the grader.

The notebook is read with nbformat; its code cells run in order, top to bottom, in one module's
namespace, as "Run all" would run them in a fresh kernel; the contract's functions are then looked
up in that namespace like a `.py` file's. What only a Jupyter kernel can run does not run:

    %magic ...   x = %magic ...   !shell ...   x = !shell ...     the line is skipped
    %%cellmagic (first line of a cell)                            the whole cell is skipped

and each skip is a note in the run's header. A cell that raises, or that runs past its time limit
(CELL_CPU_SECONDS of CPU time, default 10 s; `MHA_SPEC_CELL_SECONDS=N` changes it: a training loop
left in a cell cannot stall a check or grading), stops there, is noted, and the cells after it
still run. A failure names the cell a function is defined in: "cell 4 (`def layer_norm(x, ...`)",
counting every cell of the notebook from 1, Markdown ones too, as they appear on screen.

Inside a notebook, `from spec_tests import check; check(globals(), chapter="masks")` runs a
chapter's claims against the notebook's own functions, in the kernel, and prints the summary (`check`).
"""

from __future__ import annotations

import contextlib
import inspect
import linecache
import os
import re
import signal
import sys
import threading
import types
from dataclasses import dataclass
from pathlib import Path

CELL_CPU_SECONDS = float(os.environ.get("MHA_SPEC_CELL_SECONDS") or 10.0)
NOTE = "notebook: "  # the notes of a notebook's loading (Implementation.notes), shown in the run's header
WHERE = "notebook function: "  # where a contract function is defined (a note, read back by `located`)
IPYTHON_LINE = re.compile(r"^\s*(?:[\w.\[\], ]+=\s*)?[%!]")  # %magic, !shell, x = %magic, x = !shell
_LOADING = threading.local()  # set while a notebook runs as an implementation: check() then does nothing
CHECKED = "your_notebook"  # the module check() makes of a notebook's namespace: its name in the summary


@dataclass
class Cell:
    number: int  # 1-based, among all the notebook's cells
    source: str

    @property
    def label(self) -> str:
        first = next((ln.strip() for ln in self.source.splitlines() if ln.strip()), "")
        return f"cell {self.number} (`{first[:60]}{'...' if len(first) > 60 else ''}`)"


class CellTimeLimit(BaseException):
    """A cell ran past its CPU time limit (a BaseException: a learner's `except Exception` cannot hide it)."""


def code_cells(path: Path) -> list[Cell]:
    """The notebook's code cells, in order, read with nbformat."""
    import nbformat

    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as exc:  # not JSON, not a notebook
        raise ValueError(f"{path.name} is not a Jupyter notebook nbformat can read: {exc}") from None
    return [Cell(n, c.source) for n, c in enumerate(nb.cells, start=1) if c.cell_type == "code"]


def python_only(cell: Cell) -> tuple[str, list[str]]:
    """The cell's source with IPython-only lines made `pass` (line numbers kept), and the lines skipped."""
    lines = cell.source.splitlines()
    if lines and lines[0].lstrip().startswith("%%"):
        return "", [lines[0].strip()]
    kept, skipped = [], []
    for line in lines:
        if IPYTHON_LINE.match(line):
            indent = line[: len(line) - len(line.lstrip())]
            kept.append(f"{indent}pass")
            skipped.append(line.strip())
        else:
            kept.append(line)
    return "\n".join(kept) + "\n", skipped


def python_source(path: Path) -> str:
    """The notebook's code cells as one Python source, IPython-only lines made `pass` (to read, not to run)."""
    return "\n".join(python_only(cell)[0] for cell in code_cells(Path(path)))


@contextlib.contextmanager
def cpu_limit(seconds: float):
    """Raise CellTimeLimit in this thread after `seconds` of the process's CPU time (SIGPROF); where
    signals cannot be used (not the main thread, no setitimer), no limit."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable or seconds <= 0:
        yield
        return

    def expire(signum, frame):
        raise CellTimeLimit()

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def _run_cell(cell: Cell, code: str, filename: str, namespace: dict) -> str | None:
    """Run one cell; None when it ran to its end, else the note saying where and why it stopped."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)  # tracebacks show the line
    try:
        compiled = compile(code, filename, "exec")
    except SyntaxError as exc:
        return f"{cell.label} is not valid Python (line {exc.lineno}: {exc.msg}); it did not run"
    try:
        with cpu_limit(CELL_CPU_SECONDS):
            exec(compiled, namespace)
    except CellTimeLimit:
        return (f"{cell.label} was stopped after {CELL_CPU_SECONDS:g} s of CPU time, the limit per cell "
                "(a training loop or a long demo? MHA_SPEC_CELL_SECONDS=N changes it)")
    except Exception as exc:
        tb = exc.__traceback__
        line = next((n for frame, n in _frames(tb) if frame.f_code.co_filename == filename), None)
        at = f" at line {line}" if line else ""
        return f"{cell.label} raised {type(exc).__name__}{at}: {str(exc)[:200]}"
    return None


def _frames(tb):
    while tb is not None:
        yield tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next


def load(path: Path, functions=()) -> tuple[types.ModuleType, list[str]]:
    """Run the notebook's code cells into a new module; the module, and notes on what did not run and on
    the cell each of `functions` (the contract's names) is defined in."""
    path = Path(path).resolve()
    cells = code_cells(path)
    name = "_spec_notebook_" + "".join(c if c.isalnum() else "_" for c in str(path))
    module = types.ModuleType(name, f"the code cells of {path.name}")
    module.__file__ = str(path)
    sys.modules[name] = module
    notes, where = [], {}
    _LOADING.active = getattr(_LOADING, "active", 0) + 1
    try:
        for index, cell in enumerate(cells):
            code, skipped = python_only(cell)
            if skipped:
                what = "the cell magic" if not code else f"{len(skipped)} IPython line(s)"
                notes.append(f"{NOTE}{cell.label}: skipped {what} ({'; '.join(skipped)[:80]}): magics and "
                             "shell commands run only in Jupyter")
            if not code.strip():
                continue
            filename = f"{path.name}, {cell.label.split(' (')[0]}"
            where[filename] = cell.label
            stopped = _run_cell(cell, code, filename, module.__dict__)
            if stopped:
                notes.append(f"{NOTE}{stopped}" + ("; the cells after it still ran" if index + 1 < len(cells) else ""))
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        _LOADING.active -= 1
    return module, notes + _defined_in(module, where, functions)


def _defined_in(module, where: dict, functions) -> list[str]:
    found = []
    for fname in functions:
        fn = getattr(module, fname, None)
        code = getattr(inspect.unwrap(fn), "__code__", None) if callable(fn) else None
        if code is not None and code.co_filename in where:
            found.append(f"{WHERE}{fname} in {where[code.co_filename]}")
    return found


def located(impl, fname: str) -> str | None:
    """Where a notebook's `fname` is defined ("cell 4 (`def layer_norm(...`)"), from the notes of its loading."""
    prefix = f"{WHERE}{fname} in "
    return next((n[len(prefix):] for n in getattr(impl, "notes", ()) if n.startswith(prefix)), None)


def header_notes(impl) -> list[str]:
    """The notes of a notebook's loading, for the run's header."""
    return [n[len(NOTE):] for n in getattr(impl, "notes", ()) if n.startswith(NOTE)]


def check(namespace: dict, chapter: str | None = None, claim: str | None = None, *pytest_args: str):
    """Run the specification (a chapter, or a claim) against the functions of `namespace`, in this process.

        from spec_tests import check
        check(globals(), chapter="masks")       # one chapter; check(globals()) runs every chapter

    Prints the run and its summary by claim; returns pytest's exit code (0: every claim checked holds).
    `namespace` must set BACKEND ("numpy" or "torch"), as an implementation module does. While the
    notebook itself is being checked from outside (`mha-spec check hw.ipynb`) it does nothing.
    """
    import pytest

    from spec_tests.__main__ import check_args

    if getattr(_LOADING, "active", 0):
        print("check(): skipped while this notebook is itself being checked")
        return None
    if not isinstance(namespace, dict):
        raise ValueError(f"check() takes the notebook's namespace, check(globals()); got {type(namespace).__name__}")
    if namespace.get("BACKEND") not in ("numpy", "torch"):
        raise ValueError('check(): set BACKEND = "numpy" (or "torch") in a cell above, as the template does; '
                         f"BACKEND is {namespace.get('BACKEND')!r}")
    # kept in sys.modules after the run: a failure's reproduction snippet, pasted into the notebook, loads it
    module = types.ModuleType(CHECKED, "the functions of the notebook that called check()")
    module.__dict__.update({k: v for k, v in namespace.items() if not k.startswith("_")})
    sys.modules[CHECKED] = module
    extra = [*(("--chapter", chapter) if chapter else ()), *(("--claim", claim) if claim else ()),
             "-p", "no:cacheprovider", *pytest_args]
    return pytest.main(check_args(CHECKED, extra))
