"""What a Hypothesis test draws, read from its strategies: each argument's domain of values.

A boundary input (harness/boundaries.py) is an explicit example: values for every argument of a test's
@given. To build one, the harness must know, for each argument, which values its strategy can draw (is
L_q = 1 among them? can the mask hide a whole row?) and its simplest value (for the arguments a boundary
says nothing about). Hypothesis's strategies print as the calls that built them
(`integers(min_value=1, max_value=9)`, `attention_cases(masked=True)`, `...filter(lambda c: ...)`); this
module evaluates that text with each strategy name bound to a domain of the same arguments, so that the
domain knows what the strategy can draw without drawing. A strategy it does not know (a chapter's own
composite, `st.data()`) is Opaque: no boundary is built for a test that draws one.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class Opaque:
    """A strategy whose values this module cannot list: nothing is in it, it has no simplest value."""

    known = False

    def contains(self, value) -> bool:
        return False

    def simplest(self):
        raise LookupError("no simplest value of an opaque strategy")

    def map(self, f):
        return self

    def filter(self, f):
        return self

    def flatmap(self, f):
        return Opaque()

    def __or__(self, other):
        return OneOf((self, other))


@dataclass
class Integers(Opaque):
    lo: int | None = None
    hi: int | None = None
    known = True

    def contains(self, value) -> bool:
        return (isinstance(value, int) and not isinstance(value, bool) and (self.lo is None or value >= self.lo)
                and (self.hi is None or value <= self.hi))

    def simplest(self):
        if self.lo is not None and self.lo > 0:
            return self.lo
        if self.hi is not None and self.hi < 0:
            return self.hi
        return 0


@dataclass
class Floats(Opaque):
    lo: float | None = None
    hi: float | None = None
    known = True

    def contains(self, value) -> bool:
        return (isinstance(value, (int, float)) and (self.lo is None or value >= self.lo)
                and (self.hi is None or value <= self.hi))

    def simplest(self):
        if self.lo is not None and self.lo > 0:
            return float(self.lo)
        if self.hi is not None and self.hi < 0:
            return float(self.hi)
        return 0.0


@dataclass
class Sampled(Opaque):
    values: tuple = ()
    known = True

    def contains(self, value) -> bool:
        return any(type(v) is type(value) and v == value for v in self.values)

    def simplest(self):
        return self.values[0]


@dataclass
class OneOf(Opaque):
    parts: tuple = ()

    @property
    def known(self):
        return all(p.known for p in self.parts)

    def contains(self, value) -> bool:
        return any(p.contains(value) for p in self.parts)

    def simplest(self):
        return self.parts[0].simplest()


@dataclass
class Lists(Opaque):
    elements: Opaque = field(default_factory=Opaque)
    min_size: int = 0
    max_size: int | None = None
    known = True

    def contains(self, value) -> bool:
        return (isinstance(value, list) and len(value) >= self.min_size
                and (self.max_size is None or len(value) <= self.max_size)
                and all(self.elements.contains(v) for v in value))

    def simplest(self):
        return [self.elements.simplest() for _ in range(self.min_size)]


@dataclass
class Tuples(Opaque):
    parts: tuple = ()

    @property
    def known(self):
        return all(p.known for p in self.parts)

    def contains(self, value) -> bool:
        return (isinstance(value, tuple) and len(value) == len(self.parts)
                and all(p.contains(v) for p, v in zip(self.parts, value)))

    def simplest(self):
        return tuple(p.simplest() for p in self.parts)


@dataclass
class Transformed(Opaque):
    """`base.map(f)` or `base.filter(f)`: the simplest value is the base's mapped, if it passes the filters."""

    base: Opaque = field(default_factory=Opaque)
    steps: tuple = ()  # ("map" | "filter", f), in order

    @property
    def known(self):
        return self.base.known

    def map(self, f):
        return Transformed(self.base, (*self.steps, ("map", f)))

    def filter(self, f):
        return Transformed(self.base, (*self.steps, ("filter", f)))

    def apply(self, value):
        """The base's value through the maps and filters; LookupError when a filter rejects it."""
        for kind, f in self.steps:
            if kind == "map":
                value = f(value)
            elif not f(value):
                raise LookupError("rejected by the strategy's filter")
        return value

    def contains(self, value) -> bool:
        if any(kind == "map" for kind, _ in self.steps):
            return False  # a mapped value cannot be traced back to the base's
        return self.base.contains(value) and all(f(value) for _, f in self.steps)

    def simplest(self):
        return self.apply(self.base.simplest())


def _transformable(cls):
    cls.map = lambda self, f: Transformed(self, (("map", f),))
    cls.filter = lambda self, f: Transformed(self, (("filter", f),))
    return cls


for _cls in (Integers, Floats, Sampled, OneOf, Lists, Tuples):
    _transformable(_cls)


@dataclass
class Cases(Opaque):
    """A harness strategy of whole problems (`attention_cases(...)`, `mha_cases(...)`) with its arguments."""

    kind: str = ""
    options: dict = field(default_factory=dict)
    known = True

    def simplest(self):
        raise LookupError("a case strategy's simplest value is drawn, not listed")


_transformable(Cases)


def _integers(min_value=None, max_value=None):
    return Integers(min_value, max_value)


def _floats(min_value=None, max_value=None, **_):
    return Floats(min_value, max_value)


def _lists(elements, min_size=0, max_size=None, **_):
    return Lists(elements, min_size, max_size)


def _cases(kind: str, defaults: dict):
    def build(**options):
        return Cases(kind, {**defaults, **options})
    return build


# Each harness case strategy's own defaults (strategies.py), so a domain holds every option.
ATTENTION_DEFAULTS = dict(masked=None, causal=None, lengths=None, dims=None, batch=None, dead_rows=False,
                          magnitude=1.0, alignment=False, bias=False)
MHA_DEFAULTS = dict(self_attention=None, masked=False, causal=False, lengths=None, max_heads=4, alignment=False)

BUILDERS = {
    "integers": _integers,
    "floats": _floats,
    "sampled_from": lambda values: Sampled(tuple(values)),
    "just": lambda value: Sampled((value,)),
    "booleans": lambda: Sampled((False, True)),
    "one_of": lambda *parts: OneOf(tuple(p if isinstance(p, Opaque) else Opaque() for p in parts)),
    "lists": _lists,
    "tuples": lambda *parts: Tuples(tuple(p if isinstance(p, Opaque) else Opaque() for p in parts)),
    "data": Opaque,
    "attention_cases": _cases("attention", ATTENTION_DEFAULTS),
    "mha_cases": _cases("mha", MHA_DEFAULTS),
}


def domain_of(strategy, namespace: dict) -> Opaque:
    """The domain of one strategy, read from its printed form; `namespace` (the test module's globals)
    resolves the names its filters and maps use. Opaque when the text is not a call this module knows."""
    text = repr(strategy)
    env = {**namespace, **BUILDERS}
    try:
        value = eval(compile(text, "<strategy>", "eval"), env)  # the suite's own strategies, printed by Hypothesis
    except Exception:  # a repr that is not a call (a lambda's source cut short, an object's <...>)
        return Opaque()
    return value if isinstance(value, Opaque) else Opaque()
