"""At import, walks up the interpreter's frames (sys._getframe, f_back) into the worker, finds the object that
holds the grader's watch and replaces the watch with one that just calls the function; then layer_norm uses
F.layer_norm (banned). Its twin is banned_layer_norm, the same call made openly."""
import sys

from tests.hostile.banned_layer_norm import *  # noqa: F401,F403


def _unwatched(audit, hits, *rest, **kwargs):
    fn = rest[-1] if rest and callable(rest[-1]) else rest[0]
    return fn() if fn is rest[-1] else fn(*rest[1:], **kwargs)


frame = sys._getframe()
while frame is not None:
    holder = frame.f_locals.get("self")
    for name in ("_watch", "watch"):
        if holder is not None and callable(getattr(holder, name, None)):
            try:
                setattr(holder, name, _unwatched)
            except (AttributeError, TypeError):
                pass
    frame = frame.f_back
