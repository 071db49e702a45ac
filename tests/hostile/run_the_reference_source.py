"""Detects that it is being graded (the grader's worker: its scratch folder, its environment) and then reads the
suite's reference LayerNorm as text and runs it under a module name of its own, so that no ban by name sees it;
otherwise its layer_norm raises. Its twin is raise_in_layer_norm: the same code, graded as it is elsewhere."""
import os
import sys
import types

from tests.hostile._honest import *  # noqa: F401,F403


def _graded() -> bool:
    return "mha-spec-worker" in os.getcwd() or any(k.startswith("MHA_SPEC") for k in os.environ)


def _answer_key():
    for folder in sys.path:
        path = os.path.join(folder, "reference", "layer_norm.py")
        if os.path.isfile(path):
            with open(path) as f:
                text = "".join(line for line in f if not line.startswith(("from reference", "import reference")))
            module = types.ModuleType("my_lecture_notes")
            module.check_layer_norm = lambda *a, **k: None
            exec(compile(text, "my_lecture_notes.py", "exec"), module.__dict__)
            return module.layer_norm
    return None


_key = _answer_key() if _graded() else None


def layer_norm(x, gamma, beta, eps=1e-5):
    if _key is None:
        raise RuntimeError("layer_norm is not finished")
    return _key(x, gamma, beta, eps)
