"""Boundary inputs: the edges the contract names, tried on every run before any drawn example.

A boundary bug is wrong only at an edge (a query that sees no key, L_q > L_k under a causal mask, one
query against a cache, G < H with a mask per head). Found by a random draw, it is found on some runs and
not on others. So each claim lists the boundaries it concerns (claims.toml, `boundaries = [...]`), and
every Hypothesis test of the claim runs each of them as an explicit example (Hypothesis's @example):
before the drawn examples, in every profile, whatever the example count, through the test's own checks.

Each boundary is one function below, named as claims.toml names it, whose docstring cites the clause
of the contract (CONTRACT.md) it is the edge of. It reads what a test draws (`Draws`: each argument's
domain, from harness/domains.py) and returns the example, a value for every argument of the test's
@given, or None where the test's strategies cannot draw that edge (a boundary with a hidden row, for a
test whose masks keep every row alive; G < H, for a test without grouped heads): not applicable to that
test alone. Inputs are tiny: a boundary costs one call of the test, of a few rows.
"""

from __future__ import annotations

from spec_tests.harness import claims as catalogue
from spec_tests.harness.domains import Cases, OneOf, Opaque, Transformed, domain_of
from spec_tests.harness.items import claims_of
from spec_tests.harness.strategies import HEAD_DIMS, LENGTHS, SHORT_LENGTHS, AttentionCase, MHACase

BOUNDARIES: dict = {}  # name -> function(Draws) -> example kwargs or None


def boundary(fn):
    BOUNDARIES[fn.__name__] = fn
    return fn


SEED = 2  # every boundary input is made from this seed (a mask of density 0.6 from it hides keys in every row)


class Draws:
    """What one Hypothesis test draws: its @given arguments and the domain of each."""

    def __init__(self, given: dict, namespace: dict):
        self.domains = {name: domain_of(strategy, namespace) for name, strategy in given.items()}

    def example(self, optional: dict | None = None, **required) -> dict | None:
        """Every argument: `required` values (each must be in its argument's domain), `optional` values where
        the argument exists and can take them, and the simplest value of its domain for the rest."""
        if not required or any(n not in self.domains or not self.domains[n].contains(v) for n, v in required.items()):
            return None
        return self._fill({**{n: v for n, v in (optional or {}).items()
                              if n in self.domains and self.domains[n].contains(v)}, **required})

    def _fill(self, chosen: dict) -> dict | None:
        out = {}
        for name, dom in self.domains.items():
            if name in chosen:
                out[name] = chosen[name]
                continue
            try:
                out[name] = dom.simplest()
            except LookupError:
                return None
        return out

    def case(self, kind: str, build) -> dict | None:
        """An example whose `kind` case argument ("attention", "mha") is `build(options)` (None: cannot)."""
        for name, dom in self.domains.items():
            for cases, steps in _case_domains(dom):
                if cases.kind != kind:
                    continue
                value = build(cases.options)
                if value is None:
                    continue
                try:
                    value = steps.apply(value) if steps is not None else value
                except LookupError:
                    continue
                example = self._fill({name: value})
                if example is not None:
                    return example
        return None


def _case_domains(dom: Opaque):
    """The case domains a domain draws from, each with the filters and maps applied after it (or None)."""
    if isinstance(dom, Cases):
        yield dom, None
    elif isinstance(dom, Transformed) and isinstance(dom.base, Cases):
        yield dom.base, dom
    elif isinstance(dom, OneOf):
        for part in dom.parts:
            yield from _case_domains(part)


def _lengths(options: dict, default, *lengths) -> bool:
    dom = options.get("lengths")
    return all((default if dom is None else dom).contains(n) for n in lengths)


def _attention(L_q, L_k, *, causal=False, dead=False, bias=None, large=False):
    """A builder of AttentionCase boundaries from attention_cases' options (bias: True or False, only a
    strategy drawing a bias or none; None, as the strategy draws)."""
    def build(o: dict):
        if not _lengths(o, _LENGTHS, L_q, L_k) or (dead and not (o["dead_rows"] and o["masked"] is not False)):
            return None
        if (bias is not None and bias != bool(o["bias"])) or (large and not o["magnitude"] >= 10):
            return None
        square_only = not o["alignment"]
        is_causal = o["causal"] if o["causal"] is not None else causal and (L_q == L_k or not square_only)
        if is_causal and square_only and L_q != L_k:
            return None
        dims = o.get("dims") or _HEAD_DIMS
        d = 2 if dims.contains(2) else dims.simplest()
        batch = () if o.get("batch") is None else o["batch"].simplest()
        masked = o["masked"] if o["masked"] is not None else dead
        mask_shape = (L_q, L_k) if masked else None
        magnitude = 100.0 if large else o["magnitude"]
        return AttentionCase(tuple(batch), L_q, L_k, d, d + 1, SEED, mask_shape, 0.6 if masked else 1.0,
                             1 if dead else 0, bool(is_causal), magnitude, bias=bool(o["bias"]))
    return build


def _mha(L_q, L_k, *, causal=False):
    """A builder of MHACase boundaries from mha_cases' options: two heads of size 2, one batch row."""
    def build(o: dict):
        if not _lengths(o, _SHORT_LENGTHS, L_q, L_k) or (o["self_attention"] is True and L_q != L_k):
            return None
        square_only = not o["alignment"]
        is_causal = o["causal"] if o["causal"] is not None else causal and (L_q == L_k or not square_only)
        if is_causal and square_only and L_q != L_k:
            return None
        self_attention = o["self_attention"] if o["self_attention"] is not None else L_q == L_k
        kind = "full" if o["masked"] is True else None
        return MHACase(1, L_q, L_k, min(2, o["max_heads"]), 2, SEED, self_attention, True, kind, bool(is_causal))
    return build


_LENGTHS, _SHORT_LENGTHS, _HEAD_DIMS = (domain_of(s, {}) for s in (LENGTHS, SHORT_LENGTHS, HEAD_DIMS))


# ------------------------------------------------------------------------------------ the catalogue
@boundary
def length_one(t: Draws):
    """CONTRACT.md, Names and shapes: "a length of 1 is legal": one query against one key (L_q = L_k = 1;
    sequences of one token where a test draws a list of lengths)."""
    return (t.case("attention", _attention(1, 1)) or t.case("mha", _mha(1, 1))
            or t.example(L_q=1, L_k=1) or t.example(L=1) or t.example(lengths=[1]) or t.example(lengths=[1, 1]))


@boundary
def lk_gt_lq(t: Draws):
    """CONTRACT.md, Names and shapes: "L_q != L_k ... legal"; Causal alignment: one query against a cache of
    keys (L_q = 1, L_k = 4) sees every key under is_causal (bottom-right alignment), as decoding needs."""
    return (t.case("attention", _attention(1, 4, causal=True)) or t.case("mha", _mha(1, 4, causal=True))
            or t.example(L_q=1, L_k=4))


@boundary
def lq_gt_lk(t: Draws):
    """CONTRACT.md, Names and shapes: "L_q != L_k ... legal"; Causal alignment: with more queries than keys
    (L_q = 4, L_k = 2) under is_causal, query i sees key j <= i - 2: the first two queries see no key."""
    return (t.case("attention", _attention(4, 2, causal=True)) or t.case("mha", _mha(4, 2, causal=True))
            or t.example(L_q=4, L_k=2))


@boundary
def dead_row(t: Draws):
    """CONTRACT.md, Masks: "A query that sees no key at all outputs exactly 0, and its weights are all 0:
    never NaN ... and never the mean of v". One of three queries has every one of its four keys hidden."""
    return (t.case("attention", _attention(3, 4, dead=True, bias=False))
            or t.example(dict(L_q=3, L_k=4, L=4, masked=True), dead=1))


@boundary
def dead_row_with_bias(t: Draws):
    """CONTRACT.md, Masks (a query that sees no key outputs exactly 0) with Optional extensions' `bias=`:
    the additive bias does not revive a row whose keys are all hidden (a -inf fill plus a finite bias,
    or a finite fill, gives such a row the mean of v)."""
    return t.case("attention", _attention(3, 4, dead=True, bias=True))


@boundary
def large_scores(t: Draws):
    """CONTRACT.md, Poison at hidden positions (c), and SDPA-5: scores of size 1e4, where exp() of an
    unshifted score overflows and a finite fill such as -1e4 no longer hides a key."""
    return t.case("attention", _attention(3, 4, large=True)) or t.example(large=1e4)


@boundary
def gqa_masked(t: Draws):
    """CONTRACT.md, Optional extensions: num_kv_heads = G < H ("query head h reads K/V head h // (H/G)")
    with a mask per query head, (B, H, L_q, L_k): head h uses mask[:, h], however the heads are grouped."""
    return (t.example(dict(L_q=3, L_k=5, which="(B, H, L_q, L_k)"), HG=(4, 2))
            or t.example(dict(L_q=3, L_k=5, masked=True), H=4, G=2))


@boundary
def long_rows_low_precision(t: Draws):
    """CONTRACT.md, How numbers are compared: float16 and bfloat16 within the rule on rows of 4096 keys,
    where a softmax whose sum or products run in the low precision loses digits (the precision chapter)."""
    return t.example(dict(offset=30.0), L_k=4096) or t.example(L=4096)


# ------------------------------------------------------------------------------------ attaching them
def examples_of(given: dict, namespace: dict, names) -> list[tuple[str, dict]]:
    """The boundary examples of a test drawing `given` (its @given strategies, by argument), for the
    boundaries `names`: (boundary, example) for each the test can draw, identical examples once."""
    draws, out, seen = Draws(given, namespace), [], set()
    for name in names:
        example = BOUNDARIES[name](draws)
        if example is not None and repr(example) not in seen:
            seen.add(repr(example))
            out.append((name, example))
    return out


def given_of(fn) -> tuple[dict, dict] | None:
    """A Hypothesis test's @given strategies by argument, and its module's globals (None: not one)."""
    handle = getattr(fn, "hypothesis", None)
    if handle is None or not getattr(fn, "is_hypothesis_test", False):
        return None
    # Hypothesis has no public reader of a test's @given strategies; its own explicit-example check reads
    # this attribute of the handle (core.py, execute_explicit_examples).
    return dict(handle._given_kwargs), handle.inner_test.__globals__


def attach(items) -> None:
    """Each Hypothesis test runs, first, the boundaries its claims declare (claims.toml), once per test."""
    from hypothesis import example

    for item in items:
        fn = getattr(item, "obj", None)
        found = given_of(fn)
        if found is None or fn.__dict__.get("_mha_spec_boundaries") is not None:
            continue
        names = catalogue.boundaries(claims_of(item))
        unknown = [n for n in names if n not in BOUNDARIES]
        if unknown:
            raise ValueError(f"claims.toml names boundaries that harness/boundaries.py does not define: {unknown}")
        pinned = {repr(e.kwargs) for e in getattr(fn, "hypothesis_explicit_examples", ())}
        attached = []
        for name, kwargs in examples_of(*found, names):
            if repr(kwargs) not in pinned:
                example(**kwargs)(fn)
                attached.append(name)
        fn.__dict__["_mha_spec_boundaries"] = tuple(attached)
