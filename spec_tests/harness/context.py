"""What test is running now: its node id and claims, for messages built deep inside helpers."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class TestInfo:
    nodeid: str = ""
    name: str = ""
    claims: tuple[str, ...] = ()
    impl_spec: str = ""
    extras: dict = field(default_factory=dict)


CURRENT: ContextVar[TestInfo] = ContextVar("spec_current_test", default=TestInfo())


def current() -> TestInfo:
    return CURRENT.get()
