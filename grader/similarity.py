"""Copies flagged: how much of a submission's code matches the public implementations or another
submission, the way MOSS-style checkers measure it.

The reference (`reference/`) and the built-in implementations (`impls/`) are public: a student
who runs the suite has them. The grader therefore compares every submission with them, and, in a
batch, with every other submission, and reports what it finds to the instructor. It never changes
a score and never tells the student anything: a match is evidence for a person to look at, not a
verdict.

    tokens(source)      Python's tokenize; identifiers -> "V", numbers -> "N", strings -> "S";
                        comments, docstrings, blank lines and indentation dropped
    k-grams             every run of K consecutive tokens, hashed
    fingerprints(s)     winnowing (Schleimer, Wilkerson and Aiken 2003): in each window of W
                        consecutive k-gram hashes keep the smallest (the rightmost on a tie)
    containment(a, b)   |F(a) ∩ F(b)| / |F(a)|   (F: fingerprints, minus the template's)

The template students start from (`impls/template.py`) is subtracted: its fingerprints match
nothing. A submission is flagged when the containment of its fingerprints in a source reaches
THRESHOLD; the fingerprints of the whole reference and of each built-in implementation are pooled
per source, so a file pasted together from several of them is measured against each and against
their union ("reference + impls").
"""

from __future__ import annotations

import hashlib
import io
import keyword
import tokenize
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from grader import cache as cache_mod
from spec_tests.harness import packages

ROOT = packages.home("impls")  # the folder holding reference/ and impls/ (the repository, or the wheel's bundle)
K = 12  # tokens per k-gram: long enough that common idioms (np.swapaxes(k, -1, -2)) do not match alone
W = 8  # winnowing window: any match of at least W + K - 1 tokens is found
THRESHOLD = 0.5  # containment at which a submission is reported
TEMPLATE = ROOT / "impls" / "template.py"
SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
        tokenize.ENCODING, tokenize.ENDMARKER}
FSTRING_START, FSTRING_MIDDLE, FSTRING_END = (getattr(tokenize, n, -1) for n in
                                              ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END"))  # Python 3.12+


def tokens(source: str) -> list[str]:
    """The normalised token stream of Python source (empty when it does not tokenize)."""
    out: list[str] = []
    previous = tokenize.NEWLINE
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            kind = tok.type
            if kind in SKIP:
                if kind in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL):
                    previous = tokenize.NEWLINE
                continue
            if kind == tokenize.STRING and previous == tokenize.NEWLINE:
                previous = kind  # a docstring or a bare string statement: dropped
                continue
            previous = kind
            if kind == tokenize.NAME:
                out.append(tok.string if keyword.iskeyword(tok.string) or tok.string in ("np", "torch") else "V")
            elif kind == tokenize.NUMBER:
                out.append("N")
            elif kind in (tokenize.STRING, FSTRING_START):
                out.append("S")  # an f-string's expressions follow as tokens of their own
            elif kind in (FSTRING_MIDDLE, FSTRING_END):
                continue
            else:
                out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def _hash(gram: tuple[str, ...]) -> int:
    return int.from_bytes(hashlib.blake2b(" ".join(gram).encode(), digest_size=8).digest(), "big")


def fingerprints(source: str) -> set[int]:
    """Winnowed k-gram hashes of the source (all of them when it is shorter than one window)."""
    toks = tokens(source)
    hashes = [_hash(tuple(toks[i:i + K])) for i in range(len(toks) - K + 1)]
    if len(hashes) <= W:
        return set(hashes)
    chosen = set()
    for i in range(len(hashes) - W + 1):
        window = hashes[i:i + W]
        low = min(window)
        chosen.add(i + max(j for j, h in enumerate(window) if h == low))
    return {hashes[i] for i in chosen}


@cache
def template() -> frozenset[int]:
    return frozenset(fingerprints(TEMPLATE.read_text())) if TEMPLATE.exists() else frozenset()


def _public_files() -> tuple[list[Path], list[Path]]:
    """The reference's modules, and the public implementations' files (each one source)."""
    reference = sorted((ROOT / "reference").glob("*.py"))
    impls = [p for p in [*sorted((ROOT / "impls").glob("*.py")), ROOT / "impls" / "mutants" / "_base.py"]
             if p.name not in ("template.py", "__init__.py") and p.exists()]
    return reference, impls


@cache
def public_sources() -> dict[str, frozenset[int]]:
    """The public code a student has: the reference (one source), each built-in implementation, and
    the correct base of the known bugs (impls/mutants/_base.py). Kept on disk between grading runs
    (grader/cache.py), named by the contents of these files, the template and this module."""
    reference, impls = _public_files()
    inputs = [*reference, *impls, Path(__file__)] + ([TEMPLATE] if TEMPLATE.exists() else [])
    found = cache_mod.cached("public-fingerprints", inputs, ROOT, lambda: _public_sources(reference, impls))
    return {k: frozenset(v) for k, v in found.items()}


def _public_sources(reference: list[Path], impls: list[Path]) -> dict[str, list[int]]:
    out: dict[str, set[int]] = {"reference/": set().union(*(fingerprints(p.read_text()) for p in reference))}
    for path in impls:
        out[path.relative_to(ROOT).as_posix()] = fingerprints(path.read_text())
    out["reference/ + impls/"] = set().union(*out.values())
    return {k: sorted(v - template()) for k, v in out.items()}


def containment(mine: set[int], theirs: frozenset[int] | set[int]) -> float:
    return len(mine & theirs) / len(mine) if mine else 0.0


@dataclass
class Match:
    source: str  # "reference/", "impls/numpy_fast.py", "reference/ + impls/" or another submission's name
    share: float  # the share of the submission's fingerprints found in the source (0 to 1)

    def as_dict(self) -> dict:
        return {"source": self.source, "share": round(self.share, 3)}


def own_fingerprints(source: str) -> set[int]:
    """A submission's fingerprints, less the template's."""
    return fingerprints(source) - template()


def against_public(source: str, top: int = 3) -> list[Match]:
    """The public sources that share most of this submission's fingerprints, best first."""
    mine = own_fingerprints(source)
    found = [Match(name, containment(mine, fp)) for name, fp in public_sources().items()]
    found.sort(key=lambda m: -m.share)
    return found[:top]


def flagged(matches: list[Match]) -> list[Match]:
    return [m for m in matches if m.share >= THRESHOLD]


def pairwise(sources: dict[str, str]) -> dict[str, list[Match]]:
    """In a batch: for each submission, the other submissions holding most of its fingerprints."""
    prints = {name: own_fingerprints(text) for name, text in sources.items()}
    public = set().union(*public_sources().values())
    out: dict[str, list[Match]] = {}
    for name, mine in prints.items():
        mine = mine - public  # what two students share with the reference is reported against it, not each other
        found = [Match(other, containment(mine, theirs)) for other, theirs in prints.items() if other != name]
        out[name] = sorted(found, key=lambda m: -m.share)[:3]
    return out


def report(name: str, source: str, peers: list[Match] | None = None) -> dict:
    """What the instructor sees for one submission (results.json extra_data, gradebook, log)."""
    public = against_public(source)
    flags = flagged(public) + flagged(peers or [])
    return {
        "checked": bool(tokens(source)),
        "threshold": THRESHOLD,
        "public": [m.as_dict() for m in public],
        "peers": [m.as_dict() for m in (peers or [])],
        "flagged": bool(flags),
        "summary": ("near-copy of " + ", ".join(f"{m.source} ({m.share:.0%})" for m in flags)) if flags else "",
    }
