"""Figures that tests measured (JSON files a test writes under $MHA_SPEC_MEASUREMENTS), as a fragment per chapter.

A file is named after its claim: `EFF-2-numpy_chunked-float64.json` holds what the EFF-2 test
measured for numpy_chunked in float64. Its top level holds scalars (impl, dtype, method, ...)
and series: objects with an `L` list and lists of the same length (peak_bytes, ...) beside
scalars (growth_exponent, ...). Each series becomes a table, each scalar a line.
"""

from __future__ import annotations

import json
from pathlib import Path

from docs_gen import GENERATED_NOTE
from docs_gen.benchmarks import fmt_bytes
from docs_gen.claims_pages import text
from spec_tests.harness.claims import Chapter, Claim


def _claim_of(stem: str, claims: dict[str, Claim]) -> str | None:
    for cid in sorted(claims, key=len, reverse=True):  # EFF-2 before EFF-
        if stem.startswith(cid + "-"):
            return cid
    return None


def _value(key: str, v) -> str:
    if isinstance(v, (int, float)) and "bytes" in key:
        return fmt_bytes(v)
    return text(str(v))


def _series_table(name: str, series: dict) -> list[str]:
    L = series.get("L", [])
    columns = [k for k, v in series.items() if k != "L" and isinstance(v, list) and len(v) == len(L)]
    scalars = {k: v for k, v in series.items() if not isinstance(v, list)}
    out = [f"**{text(name.replace('_', ' '))}**" + (": " + ", ".join(f"{text(k.replace('_', ' '))} {_value(k, v)}"
                                                                      for k, v in scalars.items()) if scalars else ""), ""]
    out += ["| L | " + " | ".join(text(c.replace("_", " ")) for c in columns) + " |",
            "| ---: | " + " | ".join("---:" for _ in columns) + " |"]
    for i, n in enumerate(L):
        out.append(f"| {n} | " + " | ".join(_value(c, series[c][i]) for c in columns) + " |")
    return out + [""]


def _is_series(v) -> bool:
    return isinstance(v, dict) and isinstance(v.get("L"), list)


def _headline(series) -> str:
    """A series' first scalar figure, named: e.g. "growth exponent 1.01"."""
    if not _is_series(series):
        return "-"
    for k, v in series.items():
        if not isinstance(v, list):
            return f"{text(k.replace('_', ' '))} {_value(k, v)}"
    return "-"


def fragment(chapter: Chapter, claims: dict[str, Claim], folder: Path | None, created: str | None) -> str:
    out = [GENERATED_NOTE.format(source="the measurements of the conformance run ($MHA_SPEC_MEASUREMENTS)"), ""]
    files = []
    if folder is not None and folder.is_dir():
        for path in sorted(folder.glob("*.json")):
            cid = _claim_of(path.stem, claims)
            if cid and claims[cid].chapter == chapter.id:
                files.append((cid, path))
    if not files:
        out.append("*No test of this chapter recorded measurements in the run behind this build.*")
        return "\n".join(out) + "\n"
    if created:
        out += [f"Measured in the conformance run of {created} (the [conformance matrix](conformance.md) gives its machine).", ""]
    loaded = [(cid, path.stem[len(cid) + 1:], json.loads(path.read_text(encoding="utf-8"))) for cid, path in files]
    # Summary: one row per measurement, one column per series, showing each series' first scalar figure
    # (for EFF-2 its growth exponent); the full figures follow, folded.
    names = list(dict.fromkeys(k for _, _, d in loaded for k, v in d.items() if _is_series(v)))
    if names:
        out += ["| claim | measured | " + " | ".join(text(n.replace("_", " ")) for n in names) + " |",
                "| --- | --- | " + " | ".join("---:" for _ in names) + " |"]
        for cid, label, data in loaded:
            cells = [_headline(data.get(n)) for n in names]
            out.append(f"| [{cid}](#{cid.lower()}) | `{label}` | " + " | ".join(cells) + " |")
        out.append("")
    for cid, label, data in loaded:
        body = []
        scalars = {k: v for k, v in data.items() if not isinstance(v, (dict, list))}
        if scalars:
            body += [", ".join(f"{text(k)}: {_value(k, v)}" for k, v in scalars.items()), ""]
        for key, value in data.items():
            if _is_series(value):
                body += _series_table(key, value)
        out += [f'??? info "{cid}: {label}"', ""] + [("    " + line) if line else "" for line in body]
    return "\n".join(out).rstrip() + "\n"


def write_all(chapters: dict[str, Chapter], claims: dict[str, Claim], folder: Path | None, fragments: Path,
              created: str | None = None) -> list[Path]:
    written = []
    for ch in chapters.values():
        path = fragments / f"{ch.id}.measurements.md"
        path.write_text(fragment(ch, claims, folder, created), encoding="utf-8")
        written.append(path)
    return written
