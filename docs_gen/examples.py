"""The chapters' worked examples: run each docs_gen/worked_examples/<chapter>.py and keep what it prints.

    python -m docs_gen                   runs them all (with the rest of the generated pages)
    python -m docs_gen.examples          only the examples

A chapter page shows the example's source (included by snippet from docs_gen/worked_examples/) and its
printed output (docs_gen/fragments/<chapter>.example.md, written here). The output is never
pasted by hand: each script runs in a fresh interpreter from the repository root, exactly as a
learner would run it (`python docs_gen/worked_examples/sdpa.py`), and a script that fails, or writes
anything to stderr, stops the generation. tests/test_worked_examples.py runs them again
and checks that the committed output is still what the reference prints.
"""

from __future__ import annotations

import docs_gen

import os
import subprocess
import sys
from pathlib import Path

from docs_gen import FRAGMENTS, GENERATED_NOTE, ROOT

EXAMPLES = ROOT / "docs_gen" / "worked_examples"


def chapters() -> list[str]:
    """The chapters that have a worked example, in file-name order."""
    return sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


def run(chapter: str) -> str:
    """What docs_gen/worked_examples/<chapter>.py prints, run from the repository root."""
    script = EXAMPLES / f"{chapter}.py"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    env.pop("PYTHONWARNINGS", None)
    proc = subprocess.run([sys.executable, str(script.relative_to(ROOT))], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 or proc.stderr.strip():
        raise RuntimeError(f"docs_gen: the worked example {script.relative_to(ROOT)} failed "
                           f"(exit code {proc.returncode}):\n{proc.stderr}")
    return proc.stdout


def fragment(chapter: str, output: str) -> str:
    """The Markdown a chapter includes: the printed output as a text block."""
    source = f"docs_gen/worked_examples/{chapter}.py"
    return (GENERATED_NOTE.format(source=f"{source} (its printed output)") + "\n\n"
            f'```text title="Output of python {source}"\n{output.rstrip()}\n```\n')


def output_of(fragment_text: str) -> str:
    """The printed output inside a fragment written by `fragment` (for the meta test)."""
    body = fragment_text.split("```text", 1)[1].split("\n", 1)[1]
    return body.rsplit("```", 1)[0].rstrip() + "\n"


def write_all(fragments: Path = FRAGMENTS) -> list[Path]:
    written = []
    for chapter in chapters():
        path = fragments / f"{chapter}.example.md"
        text = fragment(chapter, run(chapter))
        written.append(docs_gen.write_output(path, text))  # under --check: only noted if stale
    return written


if __name__ == "__main__":
    for p in write_all():
        print(p.relative_to(ROOT))
