"""docs/conventions.md states the rule spec_tests/harness/tolerance.py applies, and the chapter modules
take every bound from that module.

The page's table of numbers is rendered here from the module's constants and must appear on the page
verbatim; every size function the module offers is named on the page; the snippets the page includes
exist. A chapter module may pass `size=` only as a value computed by tolerance.py, and never builds a
`Bound` itself.
"""

import ast
import inspect
import re
from fractions import Fraction
from pathlib import Path

import pytest

from spec_tests.harness import tolerance
from spec_tests.harness.arrays import EPS
from tests.helpers import ROOT

PAGE = ROOT / "docs" / "conventions.md"
START, END = "<!-- tolerance-numbers:start -->", "<!-- tolerance-numbers:end -->"
CHAPTERS = sorted((ROOT / "spec_tests").glob("test_*.py"))


def _power_of_two(eps: float) -> str:
    n = Fraction(eps).denominator.bit_length() - 1
    assert Fraction(eps) == Fraction(1, 2**n), eps
    return f"$2^{{-{n}}}$"


def _num(x: float) -> str:
    return f"{x:.3g}"


def _latex_rtol(x: float) -> str:
    mantissa, exponent = f"{x:e}".split("e")
    assert float(mantissa) == 1.0, "the page writes F64_RTOL as a power of ten"
    return f"$10^{{{int(exponent)}}}$"


def numbers_fragment() -> str:
    """The page's table of numbers, as tolerance.py defines them."""
    rtol = _latex_rtol(tolerance.F64_RTOL)
    low = f"${_num(tolerance.FACTOR)} \\times$ naive error $+\\ {_num(tolerance.FLOOR_ULPS)}$ ulp $\\times$ output terms"
    rows = [
        "| dtype | $\\varepsilon$ (1 ulp at 1.0) | against the float64 reference | between two results |",
        "| --- | --- | --- | --- |",
        f"| float64 | {_power_of_two(EPS['float64'])} | {rtol} $\\times$ size | {rtol} $\\times$ size |",
    ]
    for dtype in ("float32", "float16", "bfloat16"):
        rows.append(f"| {dtype} | {_power_of_two(EPS[dtype])} | {low} | "
                    f"${_num(tolerance.RELATION_ULPS[dtype])}$ ulp $\\times$ size |")
    constants = (f"FACTOR = {_num(tolerance.FACTOR)}, FLOOR_ULPS = {_num(tolerance.FLOOR_ULPS)}, "
                 f"CARRIED_ULPS = {_num(tolerance.CARRIED_ULPS)}, "
                 f"F64_RTOL = {tolerance.F64_RTOL:g}, ROUNDINGS = {tolerance.ROUNDINGS}, TERMS = {tolerance.TERMS}, "
                 f"accumulator {tolerance.ACCUMULATOR}.")
    return "\n".join(rows) + "\n\n" + constants


RULE_START, RULE_END = "<!-- tolerance-rule:start -->", "<!-- tolerance-rule:end -->"


def rule_in_words() -> str:
    """The rule as CONTRACT.md and README.md state it, from the module's constants."""
    r = tolerance.RELATION_ULPS
    return "\n".join([
        f"- **float64** results must match the float64 reference to {tolerance.F64_RTOL:g} times the size of the",
        "  values involved.",
        "- **float32, float16 and bfloat16**: the error against the float64 reference may be at most",
        f"  **{_num(tolerance.FACTOR)} times** the error of the plain reference algorithm run in the same dtype, plus "
        f"**{_num(tolerance.FLOOR_ULPS)} units",
        "  in the last place** of the size of the terms that sum to the expected output (and "
        f"{_num(tolerance.CARRIED_ULPS)} ulp of",
        "  LayerNorm's row mean, a value every implementation stores rounded). The allowance grows on hard",
        "  inputs because the plain algorithm's error does; it never grows so far that an all-zero output",
        "  or a wrong scale passes.",
        "- **Relations** between two results of the same implementation (permuted inputs, an extra masked",
        f"  key) may differ by {r['float32']:.3g} units in the last place in float32, {r['float16']:.3g} in float16 "
        f"and {r['bfloat16']:.3g} in",
        "  bfloat16, times the size of the values involved.",
    ])


def _block(text: str, start: str, end: str) -> str | None:
    if start not in text or end not in text:
        return None
    return text.split(start, 1)[1].split(end, 1)[0].strip()


@pytest.mark.parametrize("name", ["CONTRACT.md", "README.md"])
def test_the_contract_and_the_readme_state_the_rule_the_module_applies(name):
    shown = _block((ROOT / name).read_text(encoding="utf-8"), RULE_START, RULE_END)
    assert shown is not None, f"{name} lost its {RULE_START} ... {RULE_END} block"
    assert shown == rule_in_words(), f"{name}'s rule differs from tolerance.py's; paste:\n{rule_in_words()}"


def test_the_precision_chapter_states_the_modules_factor_and_floor():
    page = (ROOT / "docs" / "precision.md").read_text(encoding="utf-8")
    factor, floor = _num(tolerance.FACTOR), _num(tolerance.FLOOR_ULPS)
    assert rf"\;\le\; {factor}\,\lvert" in page, f"docs/precision.md's formula should use FACTOR = {factor}"
    assert rf"\;+\; {floor}\,\text{{ulp}}" in page, f"docs/precision.md's formula should use FLOOR_ULPS = {floor}"


def test_no_other_statement_of_the_rule_in_the_chapters_and_messages():
    """The chapters' docstrings name the rule's parts, never other numbers for it."""
    for path in CHAPTERS:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"(\d+(?:\.\d+)?)\s*\*\s*\|naive", text):
            assert float(match.group(1)) == tolerance.FACTOR, f"{path.name} states a factor of {match.group(1)}"


def _page() -> str:
    return PAGE.read_text(encoding="utf-8")


def test_the_page_states_the_numbers_the_module_applies():
    page = _page()
    assert START in page and END in page, f"{PAGE} lost its {START} ... {END} block"
    shown = page.split(START, 1)[1].split(END, 1)[0].strip()
    expected = numbers_fragment()
    assert shown == expected, f"docs/conventions.md's numbers differ from tolerance.py's; paste:\n{expected}"


def test_the_relation_allowance_is_the_stated_derivation():
    for dtype, ulps in tolerance.RELATION_ULPS.items():
        derived = 2 * (tolerance.ROUNDINGS + tolerance.TERMS * EPS[tolerance.ACCUMULATOR] / EPS[dtype])
        assert ulps == pytest.approx(derived), dtype
    assert "2\\,\\Bigl(\\text{ROUNDINGS} + \\text{TERMS}" in _page()


def test_the_page_includes_the_code_it_describes():
    page = _page()
    source = (ROOT / "spec_tests" / "harness" / "tolerance.py").read_text(encoding="utf-8")
    for name in re.findall(r'--8<-- "spec_tests/harness/tolerance.py:(\w+)"', page):
        assert f"# --8<-- [start:{name}]" in source and f"# --8<-- [end:{name}]" in source, name
    for name in ("oracle_bound", "relation_bound", "required_dtype"):
        assert f'tolerance.py:{name}"' in page, f"the page should include tolerance.{name}"


def test_every_size_the_module_offers_is_explained_on_the_page():
    sizes = [n for n, f in inspect.getmembers(tolerance, inspect.isfunction)
             if n.endswith("_size") and f.__module__ == tolerance.__name__]
    missing = [n for n in sizes if f"`{n}`" not in _page()]
    assert sizes and not missing, f"size functions not explained in docs/conventions.md: {missing}"


def test_the_floor_is_the_expected_outputs_own_magnitude():
    """An all-zero output is outside the low-precision bound in every dtype, whatever the inputs' size."""
    import numpy as np

    expected = np.array([[0.3, -0.2], [0.1, 0.05]])
    for dtype in ("float32", "float16", "bfloat16"):
        bound = tolerance.oracle_bound(dtype, expected, expected, size=1e6)  # an exact yardstick, huge inputs
        assert bound.allowed == pytest.approx(tolerance.FLOOR_ULPS * EPS[dtype] * 0.3)
        assert bound.allowed < 0.3, dtype


def test_the_carried_term_is_what_stored_intermediates_move_the_output_by():
    import numpy as np

    x = np.array([[100.0, 101.0, 99.0, 100.0]])
    gamma, beta = np.array([2.0, 1.0, 1.0, 1.0]), np.zeros(4)
    assert tolerance.carried_size("layer_norm", (x, gamma, beta), {}) == pytest.approx(
        100.0 / np.sqrt(x.var() + 1e-5) * 2.0)
    assert tolerance.carried_size("scaled_dot_product_attention", (x, x, x), {}) < 1e-300  # one key: p = 1
    q, k, v = np.array([[1.0]]), np.array([[100.0], [100.5]]), np.array([[0.0], [1.0]])
    p = np.exp([100.0, 100.5]) / np.exp([100.0, 100.5]).sum()
    out = p @ v[:, 0]
    assert tolerance.carried_size("scaled_dot_product_attention", (q, k, v), {"scale": 1.0}) == pytest.approx(
        p[0] * 100.0 * abs(0.0 - out) + p[1] * 100.5 * abs(1.0 - out)  # the stored scores
        + 100.5 * out)  # the stored row normaliser (a log-sum-exp softmax), |m| x (|P| |V|)
    assert tolerance.carried_size("merge_heads", (x,), {}) == 0.0
    assert "CARRIED\\_ULPS" in _page()


# ------------------------------------------------------------------------- the chapter modules build no bound
def _tolerance_value(node, assigned: dict) -> bool:
    """Is the expression a size computed by tolerance.py (possibly through a local name or max/min)?"""
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "tolerance":
            return f.attr != "magnitude"  # a named size, whose reason the page gives; not a bare max|x|
        if isinstance(f, ast.Name) and f.id in ("max", "min"):
            return bool(node.args) and all(_tolerance_value(a, assigned) for a in node.args)
        return False
    if isinstance(node, ast.Name) and node.id in assigned:
        return _tolerance_value(assigned[node.id], {k: v for k, v in assigned.items() if k != node.id})
    return False


def _sizes_and_bounds(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        assigned = {t.id: n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
                    for t in n.targets if isinstance(t, ast.Name)}
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            f = call.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name == "Bound":
                yield fn.name, call.lineno, "builds a tolerance.Bound"
            for kw in call.keywords:
                if kw.arg == "size" and name not in ("integers", "lists", "choice", "random", "normal"):
                    if isinstance(kw.value, ast.Name) and kw.value.id in params:
                        continue  # a helper's own parameter, checked where the helper is called
                    if not _tolerance_value(kw.value, assigned):
                        yield fn.name, call.lineno, f"size={ast.unparse(kw.value)} is not computed by tolerance.py"
            if name in ("oracle_bound", "relation_bound") and len(call.args) >= 2:
                value = call.args[-1] if name == "relation_bound" else (call.args[3] if len(call.args) > 3 else None)
                if value is not None and not _tolerance_value(value, assigned):
                    yield fn.name, call.lineno, f"{name}(..., {ast.unparse(value)}) sizes a bound by hand"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_chapter_module_builds_a_bound(path):
    found = [f"{path.name}:{line} in {fn}: {what}" for fn, line, what in _sizes_and_bounds(path)]
    assert not found, "\n".join(found)
