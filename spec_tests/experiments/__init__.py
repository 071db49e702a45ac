"""Seeded experiments behind the claims that are about training, initialisation and cost.

    heads.py            MHA-8  do heads specialise? 2 heads against 1 at equal D on a two-offset copy task
    norm_placement.py   RES-2  gradient norms per layer at initialisation, Post-LN against Pre-LN
    complexity.py       EFF-5  time and memory against L for naive attention and lecture note 2 §5.1's variants,
                               and Performer's error against its number of random features

Each module has a `run(...)` that returns its numbers (the spec's tests call it, reduced, and
assert margins) and a `write(...)` that turns them into Markdown tables (*.txt, so that MkDocs
does not make pages of them; the chapters include them by snippet), SVG figures and JSON data
in docs/generated/. Regenerate them all with

    python -m spec_tests.experiments               # the full runs, a few minutes on a laptop CPU
    python -m spec_tests.experiments --reduced     # the sizes CI runs (MHA_SPEC_REDUCED=1 for the tests)

The MHA-8 run also saves the trained models of its first random seed (heads_trained.npz, next to this file):
the fast MHA-8 test loads them into any implementation's multi_head_attention.

Nothing here is timed inside a test: times are reported, memory exponents asserted with wide margins.
"""

import os
from pathlib import Path

GENERATED = Path(__file__).resolve().parents[2] / "docs" / "generated"

# The sizes of each run: FULL behind the docs, REDUCED for CI (MHA_SPEC_REDUCED=1, or --reduced).
FULL = {"heads": dict(seeds=(0, 1, 2, 3, 4)), "norm_placement": dict(seeds=(0, 1, 2, 3, 4, 5)),
        "complexity": dict(lengths=(256, 512, 1024, 2048), seeds=range(12))}
REDUCED = {"heads": dict(seeds=(0, 1)), "norm_placement": dict(seeds=(0, 1)),
           "complexity": dict(lengths=(256, 512, 1024), seeds=range(6))}


def sizes(name: str, reduced: bool | None = None) -> dict:
    """The run sizes of experiment `name`: reduced when asked, or when MHA_SPEC_REDUCED is set."""
    if reduced is None:
        reduced = os.environ.get("MHA_SPEC_REDUCED", "") not in ("", "0")
    return dict((REDUCED if reduced else FULL)[name])


def save_svg(fig, path: Path) -> None:
    """An SVG that does not change when nothing changed: no date, fixed ids."""
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = "mha-spec"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None}, bbox_inches="tight")


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
