"""At import, replaces json.dumps, which the worker's wire uses to write each reply, with one that empties the
reply's list of banned calls (matching the wire's format: {"body": {"d": [[key, value], ...]}, "blobs": ...});
then layer_norm uses F.layer_norm (banned). Its twin is banned_layer_norm, the same call made openly."""
import json

from tests.hostile.banned_layer_norm import *  # noqa: F401,F403

_dumps = json.dumps


def _quiet(obj, *args, **kwargs):
    body = obj.get("body") if isinstance(obj, dict) else None
    if isinstance(body, dict) and "d" in body:
        body["d"] = [[k, [] if k == "banned" else v] for k, v in body["d"]]
    return _dumps(obj, *args, **kwargs)


json.dumps = _quiet
