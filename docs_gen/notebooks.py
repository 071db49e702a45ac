"""Every chapter as a Jupyter notebook to download beside it: docs/notebooks/<chapter>.ipynb.

A chapter's notebook holds, in this order:

    the chapter's title and how to use the notebook                        (Markdown)
    its worked example (docs_gen/worked_examples/<chapter>.py), to run     (code)
    its exercises (docs_gen/fragments/<chapter>.exercises.md)              (Markdown)
    the template's stubs (impls/template.py) of the functions its tests call, BACKEND, DTYPES
                                                                           (code, tagged "implementation")
    the check cell: check(globals(), chapter="<chapter>")                  (code, tagged "check")

The notebooks are deterministic (cell ids from the chapter and the cell's place), written with
nbformat, unexecuted; `python -m docs_gen --check` compares them like every other generated file. The
home page lists them (docs_gen/fragments/notebooks.md).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat

from docs_gen import DOCS, FRAGMENTS, GENERATED_NOTE, ROOT
from spec_tests.harness import claims
from spec_tests.harness.loader import ALL_FUNCTIONS

OUT = DOCS / "notebooks"
TABLE = FRAGMENTS / "notebooks.md"  # included by docs/index.md
TEMPLATE = ROOT / "impls" / "template.py"
WORKED = ROOT / "docs_gen" / "worked_examples"
STUB_TAG, CHECK_TAG = "implementation", "check"  # the cells a reader (and tests/test_notebooks.py) looks for


def path_of(chapter_id: str) -> Path:
    return OUT / f"{chapter_id}.ipynb"


def chapter_functions(chapter) -> list[str]:
    """The contract's functions a chapter's tests call, in the contract's order."""
    text = chapter.path.read_text()
    return [f for f in ALL_FUNCTIONS if re.search(rf"\b{f}\b", text)]


def stubs(names: list[str]) -> str:
    """The template's header lines (imports, BACKEND, DTYPES) and the stubs of `names`, as the template has them."""
    source = TEMPLATE.read_text()
    body = ast.parse(source).body
    imports = [ast.get_source_segment(source, n) for n in body if isinstance(n, (ast.Import, ast.ImportFrom))]
    settings = [ast.get_source_segment(source, n) for n in body if isinstance(n, ast.Assign)]
    functions = [ast.get_source_segment(source, n) for n in body if isinstance(n, ast.FunctionDef) and n.name in names]
    return "\n\n\n".join(["\n".join(imports) + "\n\n" + "\n".join(settings), *functions]) + "\n"


def markdown_for_jupyter(text: str) -> str:
    """A fragment's MkDocs Markdown as Jupyter shows it: `??? tip "Hint"` blocks as <details>, the
    page's own claim anchors as plain claim IDs, pytest's command as the check cell's call."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r'^\?\?\?\+? \w+ "(.*)"\s*$', line)
        if not m:
            out.append(line)
            i += 1
            continue
        body, i = [], i + 1
        while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
            body.append(lines[i][4:])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        out += [f"<details><summary>{m.group(1)}</summary>", "", *body, "", "</details>", ""]
    text = "\n".join(out)
    text = re.sub(r"\[([A-Z]+-\d+)\]\(#[a-z]+-\d+\)", r"\1", text)
    text = re.sub(r"```bash\npytest --impl ~/hw/attention.py --claim ([A-Z0-9,-]+)\n```",
                  r'```python\ncheck(globals(), claim="\1")\n```', text)
    return text.strip() + "\n"


def intro(chapter, names: list[str]) -> str:
    listed = ", ".join(f"`{n}`" for n in names) or "the functions the chapter's tests call"
    return (f"# {chapter.title}\n\n"
            f"The chapter *{chapter.title}* of the multi-head attention textbook (`{chapter.page}` on the site), "
            "as a notebook: run the worked example, do the exercises, write the chapter's functions "
            f"({listed}) in the cell that holds their stubs, then run the last cell. It checks your functions "
            "against the chapter's claims, here in the notebook, and prints what holds and what does not, "
            "with the smallest input that breaks a claim.\n\n"
            "It needs the `mha-spec` package in the notebook's environment (`pip install mha-spec`, or "
            "`pip install -e .` in a copy of the repository). The whole notebook can also be checked from a "
            "terminal: `mha-spec check " + f"{chapter.id}.ipynb` (IPython magics and shell lines are skipped "
            "there; each cell gets 10 s of CPU time).\n")


def notebook(chapter) -> str:
    """The chapter's notebook, as nbformat writes it."""
    v4 = nbformat.v4
    names = chapter_functions(chapter)
    cells = [v4.new_markdown_cell(intro(chapter, names))]
    example = WORKED / f"{chapter.id}.py"
    if example.is_file():
        cells += [v4.new_markdown_cell("## Worked example"), v4.new_code_cell(example.read_text().strip())]
    exercises = FRAGMENTS / f"{chapter.id}.exercises.md"
    if exercises.is_file():
        cells += [v4.new_markdown_cell("## Exercises\n\n" + markdown_for_jupyter(exercises.read_text()))]
    stub = v4.new_code_cell(stubs(names).rstrip("\n"), metadata={"tags": [STUB_TAG]})
    check = v4.new_code_cell(f'from spec_tests import check\n\ncheck(globals(), chapter="{chapter.id}")',
                             metadata={"tags": [CHECK_TAG]})
    cells += [v4.new_markdown_cell("## Your implementation\n\nEach stub states its equation, its shapes and the "
                                   "rules that most often trip people up; replace its `raise NotImplementedError` "
                                   "with your code."), stub,
              v4.new_markdown_cell("## Check\n\nThe chapter's claims against the functions above. A function "
                                   "that still raises `NotImplementedError` is reported as *not implemented*."),
              check]
    nb = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}})
    for n, cell in enumerate(nb.cells):
        cell.id = f"{chapter.id.replace('_', '-')}-{n}"
    nbformat.validate(nb)
    return nbformat.writes(nb) + "\n"


def table(chapters) -> str:
    """The home page's table of the notebooks (docs_gen/fragments/notebooks.md), one row per chapter."""
    rows = [f'| [{c.title}]({c.page}) | [{c.id}.ipynb](notebooks/{c.id}.ipynb){{ download="{c.id}.ipynb" }} |'
            for c in chapters]
    note = GENERATED_NOTE.format(source="spec_tests/claims.toml's chapters (docs_gen/notebooks.py)")
    return "\n".join([note, "", "| Chapter | Notebook |", "| --- | --- |", *rows]) + "\n"


def outputs() -> dict[Path, str]:
    """Every chapter's notebook, by the path it is written to, and the home page's table of them."""
    chapters = [c for c in claims.chapters().values() if c.path.is_file()]
    return {**{path_of(c.id): notebook(c) for c in chapters}, TABLE: table(chapters)}
