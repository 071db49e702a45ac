"""The worker's watch (spec_tests/sandbox/guard.py), check by check, beside the end-to-end hostile submissions.

Each route to a banned kernel is seen by the check named in its test, and each way of tampering with the
watch is reported as tampering. The watch installs an audit hook that cannot be removed, so every probe is a
fresh `python -c` that installs it as the worker does (guard.install before the implementation's import, with
sys.audit captured then) and prints what each call under guard.watch reported; a few probes, many checks
each. Where two layers see the same route, the test looks for what only its own check reports: a name (an
alias of the operator, its module) or a message (a c_call of sys.setprofile, or the watch found off after
the call). A call of a builtin made from C (functools.partial) is not a profile event: that reaches the
checks that run after the call alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers import ROOT

PRELUDE = """
import json, sys
from spec_tests.sandbox import guard
guard.install({names!r}, {ops!r})
audit = sys.audit  # as the worker captures it, before the implementation is imported
out = {{}}

def run(fn):
    hits = []
    try:
        guard.watch(audit, hits, fn)
    except Exception as exc:
        hits.append(f"raised {{type(exc).__name__}}: {{exc}}")
    return [str(h) for h in hits]
"""
CALL_TAMPER = "(the grader's watch must stay as it is during a call)"
SWITCHED_OFF = "sys.setprofile or sys.settrace (the submission switched off"
MODES_MOVED = "PyTorch's mode stack (the submission removed or replaced"


def _probe(names: list[str], ops: list[str], body: str) -> dict:
    code = PRELUDE.format(names=names, ops=ops) + textwrap.dedent(body) + "\nprint(json.dumps(out))\n"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _tampering(hits: list[str], text: str) -> bool:
    return any(h.startswith("tampering with the grader: ") and text in h for h in hits)


def _noted(hits: list[str], text: str) -> bool:
    """Put back before the call and noted for review: the call itself is not failed for it."""
    return any(h.startswith("review: ") and text in h for h in hits)


# -- routes to a banned function without PyTorch: the call watch alone ---------------------------------
NAMES = """
import math, random, textwrap as tw
from json import dumps as d
import json as j
sqrt, rand = math.sqrt, random.random
out["alias"] = run(lambda: d([1]))
out["class"] = run(lambda: j.JSONEncoder().encode([1]))
out["module"] = run(lambda: tw.dedent("  a"))
out["builtin"] = run(lambda: sqrt(4.0))
out["bound_builtin"] = run(lambda: rand())
out["clean"] = run(lambda: (sum(i * i for i in range(100)), j.loads("[1]"), math.floor(2.5), tw.__name__))
"""


@pytest.fixture(scope="module")
def names():
    return _probe(["json.dumps", "json.JSONEncoder", "textwrap", "math.sqrt", "random.random"], [], NAMES)


def test_a_banned_function_is_seen_by_its_code_whatever_name_calls_it(names):
    assert names["alias"][:1] == ["json.dumps"]  # then json.JSONEncoder, which json.dumps uses


def test_a_banned_class_is_seen_by_the_code_of_its_methods(names):
    assert names["class"] == ["json.JSONEncoder"]


def test_a_banned_module_is_seen_by_where_the_function_called_lives(names):
    assert names["module"] == ["textwrap"]


def test_a_banned_builtin_is_seen_by_its_identity(names):
    assert names["builtin"] == ["math.sqrt"]


def test_a_banned_bound_builtin_method_is_seen_by_its_identity(names):
    assert names["bound_builtin"] == ["random.random"]


def test_what_is_not_banned_is_not_reported(names):
    assert names["clean"] == []


# -- outside a call: imports during a call, tampering before it --------------------------------------
OUTSIDE = """
out["preloaded"] = "colorsys" in sys.modules
out["imported"] = run(lambda: __import__("colorsys").rgb_to_hsv(1.0, 0.0, 0.0))
out["clean"] = run(lambda: None)
import gc
try:
    gc.get_objects()  # outside a call, as an implementation's import could: refused, and reported
    out["gc_refused"] = False
except RuntimeError:
    out["gc_refused"] = True
out["gc_outside"] = run(lambda: None)
out["gc_outside_later"] = run(lambda: None)
try:
    import torch
except ImportError:
    pass
else:
    torch._C._push_on_torch_function_stack = lambda mode: None
    out["stack_function_replaced"] = run(lambda: None)
"""


@pytest.fixture(scope="module")
def outside():
    return _probe(["colorsys"], [], OUTSIDE)


def test_a_banned_package_imported_during_a_call_is_watched_from_then_on(outside):
    """Nothing banned is loaded when the call begins, so the call watch is off until colorsys is imported."""
    assert not outside["preloaded"], "the probe needs colorsys not imported before the call"
    assert outside["imported"] == ["colorsys"]
    assert outside["clean"] == []


def test_tampering_outside_a_call_is_reported_at_every_call_after_it(outside):
    assert outside["gc_refused"], "walking the garbage collector's objects must be refused (it reaches the hook)"
    for call in ("gc_outside", "gc_outside_later"):
        assert _tampering(outside[call], "gc.get_objects"), outside[call]


def test_pytorchs_stack_functions_replaced_before_the_first_call_are_tampering(outside):
    pytest.importorskip("torch")
    hits = outside["stack_function_replaced"]
    assert _tampering(hits, "torch._C._push_on_torch_function_stack was replaced"), hits
    assert _tampering(hits, "PyTorch's mode stack functions (replaced"), hits


# -- routes to a banned PyTorch kernel ------------------------------------------------------------
ROUTES = """
import functools
import torch
from torch.nn import functional as G
ln = G.layer_norm
x = torch.rand(2, 4, dtype=torch.float64)
q = torch.rand(1, 2, 3, 4, dtype=torch.float64)
out["functional_alias"] = run(lambda: ln(x, [4]))
out["module"] = run(lambda: torch.nn.LayerNorm(4).double()(x))
out["aten_alias"] = run(lambda: torch.ops.aten.layer_norm(x, [4]))
out["aten_overload"] = run(lambda: torch.ops.aten.native_layer_norm.default(x, [4], None, None, 1e-5))
out["private_function"] = run(lambda: torch.native_layer_norm(x, [4], None, None, 1e-5))
out["tensor_method"] = run(lambda: x.softmax(-1))
out["aten_sdpa"] = run(lambda: torch.ops.aten.scaled_dot_product_attention(q, q, q))
out["c_sdpa"] = run(lambda: torch._C._nn.scaled_dot_product_attention(q, q, q))
out["aten_private_sdpa"] = run(lambda: torch.ops.aten._scaled_dot_product_attention_math(q, q, q))
out["public_twin"] = run(lambda: torch.ops.aten.softmax.int(x, -1))
mean = lambda t: t.mean(-1, keepdim=True)
out["by_hand"] = run(lambda: ((x - mean(x)) / ((x - mean(x)) ** 2 + 1e-5).mean(-1, keepdim=True).sqrt(),
                              (q @ q.transpose(-1, -2)).exp() / (q @ q.transpose(-1, -2)).exp().sum(-1, True)))
# The call watch switched off from C (no profile event, so only seen after the call): the modes still see all.
out["call_watch_off"] = run(lambda: (functools.partial(sys.setprofile, None)(),
                                     torch._C._nn.scaled_dot_product_attention(q, q, q)))
"""


@pytest.fixture(scope="module")
def routes():
    pytest.importorskip("torch")
    return _probe(["torch.nn.functional.layer_norm", "torch.Tensor.softmax"],
                  ["aten::scaled_dot_product_attention", "aten::_scaled_dot_product_*", "aten::_softmax"], ROUTES)


def test_a_banned_torch_function_by_an_alias_and_its_module_class(routes):
    assert routes["functional_alias"][:1] == ["torch.nn.functional.layer_norm"]
    assert not any("::" in h for h in routes["functional_alias"]), "its operators are named once, by it"
    assert routes["module"], "nn.LayerNorm calls F.layer_norm"


def test_the_operators_behind_a_banned_function_are_banned_by_any_route(routes):
    assert routes["aten_alias"] and routes["aten_overload"] and routes["private_function"], routes


def test_a_banned_tensor_method_is_seen_by_the_function_mode(routes):
    """x.softmax is a builtin bound to a new tensor each time: the function mode knows the method itself."""
    assert routes["tensor_method"] == ["torch.Tensor.softmax", "aten::_softmax"]


def test_torch_ops_aten_is_seen_by_the_call_watch_with_the_operators_schema_name(routes):
    assert "aten::scaled_dot_product_attention" in routes["aten_sdpa"], routes["aten_sdpa"]
    assert "aten::_scaled_dot_product_attention_math" in routes["aten_private_sdpa"], routes["aten_private_sdpa"]


def test_a_private_operators_public_twin_called_through_torch_ops_is_banned(routes):
    assert "aten::softmax" in routes["public_twin"], routes["public_twin"]  # aten::_softmax banned


def test_a_builtin_of_torch_named_as_a_banned_operator_is_seen_by_the_call_watch(routes):
    assert "torch._C._nn.scaled_dot_product_attention" in routes["c_sdpa"], routes["c_sdpa"]


def test_a_torch_api_call_named_as_a_banned_operator_is_seen_by_the_function_mode(routes):
    assert "torch.scaled_dot_product_attention" in routes["c_sdpa"], routes["c_sdpa"]


def test_the_private_kernel_that_runs_is_seen_by_the_dispatch_mode(routes):
    """With the call watch on, it also sees the mode call the kernel's OpOverload: the call watch is off here."""
    hits = routes["call_watch_off"]
    assert _tampering(hits, SWITCHED_OFF), hits
    assert "torch._C._nn.scaled_dot_product_attention" not in hits, "the call watch was on"
    assert [h for h in hits if h.startswith("aten::_scaled_dot_product_")], f"the kernel that ran: {hits}"
    assert "torch.scaled_dot_product_attention" in hits, f"the function mode: {hits}"


def test_layer_norm_and_attention_by_hand_use_nothing_banned(routes):
    assert routes["by_hand"] == []


# -- tampering during a call ----------------------------------------------------------------------
TAMPER = """
import ctypes, functools, gc, threading, _thread
import torch
from torch.overrides import TorchFunctionMode
x = torch.rand(2, 4, dtype=torch.float64)

def then_clean(name, fn):
    out[name] = run(fn)
    out[name + "/next"] = run(lambda: (x * 2).sum())  # the next call is watched again, and clean

then_clean("clean", lambda: None)
then_clean("setprofile", lambda: sys.setprofile(None))
then_clean("setprofile_from_c", lambda: functools.partial(sys.setprofile, None)())
then_clean("settrace", lambda: (sys.settrace(lambda *a: None), sys.settrace(None)))
out["settrace_from_c"] = run(lambda: functools.partial(sys.settrace, lambda *a: None)())
sys.settrace(None)
out["settrace_from_c/next"] = run(lambda: None)
then_clean("thread", lambda: threading.Thread(target=lambda: None).start())
then_clean("start_new_thread", lambda: _thread.start_new_thread(lambda: None, ()))
then_clean("gc_get_objects", lambda: gc.get_objects())
then_clean("gc_get_referrers", lambda: gc.get_referrers(x))
then_clean("current_frames", lambda: sys._current_frames())
then_clean("ctypes", lambda: ctypes.pythonapi.Py_IsInitialized())
then_clean("pop_function_stack", lambda: torch._C._pop_torch_function_stack())
then_clean("pop_dispatch_stack_from_c", lambda: functools.partial(torch._C._pop_torch_dispatch_stack, None)())
then_clean("audit_begin", lambda: audit(guard.EVENT, "begin"))
then_clean("addaudithook", lambda: sys.addaudithook(lambda *a: None))
then_clean("getprofile", lambda: sys.getprofile())  # the watch's bound method: its state is a slot away

def new_class():
    watch = sys.getprofile().__self__
    watch.__class__ = type("Other", (type(watch),), {"__slots__": ()})
then_clean("watch_class", new_class)
# From here on each tampering lasts: the modes' classes stay changed, an out-of-order end stays reported.
mode = lambda: next(c for c in TorchFunctionMode.__subclasses__() if c.__name__ == "_FunctionWatch")
out["mode_method"] = run(lambda: setattr(mode(), "__torch_function__", lambda *a, **k: None))
out["mode_name"] = run(lambda: setattr(mode(), "__doc__", "mine"))
out["audit_end"] = run(lambda: audit(guard.EVENT, "end", []))
out["audit_end/next"] = run(lambda: None)
"""


@pytest.fixture(scope="module")
def tamper():
    pytest.importorskip("torch")
    return _probe(["torch.nn.functional.layer_norm"], [], TAMPER)


def _check(tamper, call: str, text: str) -> None:
    assert _tampering(tamper[call], text), tamper[call]
    if call + "/next" in tamper:
        assert tamper[call + "/next"] == [], f"the call after {call}: {tamper[call + '/next']}"


def test_a_clean_call_reports_nothing(tamper):
    assert tamper["clean"] == [] and tamper["clean/next"] == []


def test_switching_the_call_watch_off_is_tampering(tamper):
    _check(tamper, "setprofile", f"sys.setprofile {CALL_TAMPER}")


def test_the_call_watch_found_off_after_the_call_is_tampering(tamper):
    _check(tamper, "setprofile_from_c", SWITCHED_OFF)


def test_calling_settrace_is_tampering(tamper):
    _check(tamper, "settrace", f"sys.settrace {CALL_TAMPER}")


def test_a_tracer_found_after_the_call_is_tampering(tamper):
    _check(tamper, "settrace_from_c", SWITCHED_OFF)


def test_starting_a_thread_is_tampering(tamper):
    _check(tamper, "thread", "a new thread")
    _check(tamper, "start_new_thread", "a new thread")


def test_walking_the_garbage_collectors_objects_is_tampering(tamper):
    _check(tamper, "gc_get_objects", "gc.get_objects")
    _check(tamper, "gc_get_referrers", "gc.get_referrers")
    _check(tamper, "current_frames", "sys._current_frames")


def test_ctypes_during_a_call_is_tampering(tamper):
    _check(tamper, "ctypes", "ctypes.")


def test_calling_pytorchs_stack_functions_is_tampering(tamper):
    _check(tamper, "pop_function_stack", f"torch._C._pop_torch_function_stack {CALL_TAMPER}")


def test_a_mode_found_off_its_stack_after_the_call_is_tampering(tamper):
    _check(tamper, "pop_dispatch_stack_from_c", MODES_MOVED)


def test_an_audit_event_of_the_watch_out_of_order_is_tampering(tamper):
    _check(tamper, "audit_begin", "sys.audit('mha_spec.guard', 'begin') called out of order")
    # an early end inside the call fails that call itself, and the watch stays on to its real end
    assert _tampering(tamper["audit_end"], "sys.audit('mha_spec.guard', 'end') called out of order"), tamper


def test_reading_the_call_watch_during_a_call_is_tampering(tamper):
    _check(tamper, "getprofile", f"sys.getprofile {CALL_TAMPER}")


def test_adding_an_audit_hook_during_a_call_is_tampering(tamper):
    _check(tamper, "addaudithook", "sys.addaudithook")


def test_changing_the_watchs_class_is_tampering(tamper):
    _check(tamper, "watch_class", "setting Watch.__class__")


def test_changing_a_modes_class_is_tampering(tamper):
    assert _tampering(tamper["mode_method"], MODES_MOVED), tamper["mode_method"]  # its methods, compared after
    assert _tampering(tamper["mode_name"], "setting _FunctionWatch.__doc__"), tamper["mode_name"]  # audited


# -- the watch's own code and state out of the implementation's reach ---------------------------------
SEALED = """
import math, random
sqrt = math.sqrt
out["early_end"] = run(lambda: (audit(guard.EVENT, "end", []), sqrt(4.0)))
out["early_end/next"] = run(lambda: None)
out["late_import"] = run(lambda: __import__("shlex").quote("a b"))
out["late_import/later"] = run(lambda: __import__("shlex").quote("c d"))
out["masked_first"] = run(lambda: random.Random(1).random())
out["masked"] = run(lambda: random.random())
out["masked_fresh_method"] = run(lambda: random._inst.random())
# At import time (outside a call, no audit event): the module's globals, the classes' methods.
guard.EVENT = "switched off"
guard.TAMPER_EVENTS = ()
out["event_renamed"] = run(lambda: sqrt(4.0))
guard._Names.resolve = lambda self: False
guard.Watch.profile = lambda self, *a: None
out["methods_replaced"] = run(lambda: sqrt(4.0))
"""
MID_CALL = """
import math
sqrt = math.sqrt
def replace_end():
    guard.Watch.end = lambda self, out: None
    sqrt(4.0)
out["mid_call"] = run(replace_end)
audit(guard.EVENT, "begin")  # outside a call, as an implementation's import could: reported ever after
out["forged_begin"] = run(lambda: None)
"""


@pytest.fixture(scope="module")
def sealed():
    return _probe(["math.sqrt", "shlex.quote", "random.random"], [], SEALED)


def test_an_early_end_of_the_watch_fails_the_call_that_sent_it(sealed):
    hits = sealed["early_end"]
    assert "math.sqrt" in hits, f"the watch must stay on after a forged end: {hits}"
    assert _tampering(hits, "'end') called out of order"), hits




def test_a_banned_function_of_a_module_first_imported_during_a_call_is_seen(sealed):
    assert sealed["late_import"] == ["shlex.quote"], sealed["late_import"]
    assert sealed["late_import/later"] == ["shlex.quote"], sealed["late_import/later"]


def test_a_banned_bound_builtin_is_not_masked_by_its_types_innocent_twin(sealed):
    assert sealed["masked_first"] == [], sealed["masked_first"]
    assert sealed["masked"] == ["random.random"], sealed["masked"]
    assert sealed["masked_fresh_method"] == ["random.random"], sealed["masked_fresh_method"]


def test_the_watch_modules_globals_changed_are_put_back_and_reported(sealed):
    hits = sealed["event_renamed"]
    assert "math.sqrt" in hits, f"renaming the event must not switch the watch off: {hits}"
    assert _noted(hits, "the grader's watch module was changed (EVENT, TAMPER_EVENTS)"), hits


def test_the_watchs_methods_replaced_are_put_back_and_reported(sealed):
    hits = sealed["methods_replaced"]
    assert "math.sqrt" in hits, f"replacing the watch's methods must not switch it off: {hits}"
    assert _noted(hits, "the grader's Watch class was changed (profile)"), hits
    assert _noted(hits, "the grader's _Names class was changed (resolve)"), hits


def test_the_watchs_methods_replaced_during_a_call_fail_that_call_and_a_forged_begin_is_tampering():
    found = _probe(["math.sqrt"], [], MID_CALL)
    hits = found["mid_call"]
    assert "math.sqrt" in hits and _tampering(hits, "the grader's Watch class was changed (end)"), hits
    assert _tampering(found["forged_begin"], "'begin') called out of order"), found["forged_begin"]


# -- a call's report sealed with the worker's key; the suite's files read as text ----------------------------
SEALED_KEY = """
import json, sys, types
from spec_tests.sandbox import guard
KEY = bytes(range(32))
guard.install(["math.sqrt"] + sys.argv[1:], [], KEY)  # argv: "reference" when the rubric bans the reference
audit = sys.audit
import math
out = {}
hits = []
result = guard.watch_sealed(audit, hits, "n1", lambda: (math.sqrt(4.0), [1, 2]), lambda r: r)
out["sealed"] = hits
out["expected"] = guard.seal(KEY, "n1", hits[:-1], (2.0, [1, 2]))
out["other_nonce"] = guard.seal(KEY, "n2", hits[:-1], (2.0, [1, 2]))
with open("reference/layer_norm.py") as f:  # the answer key, read as text and run under another name
    text = "".join(line for line in f if not line.startswith("from reference"))
notes = types.ModuleType("notes")
notes.check_layer_norm = lambda *a, **k: None
exec(compile(text, "notes.py", "exec"), notes.__dict__)
import numpy as np
hits = []
guard.watch_sealed(audit, hits, "n3", lambda: notes.layer_norm(np.ones((2, 3)), np.ones(3), np.zeros(3)))
out["stolen"] = hits
print(json.dumps(out, default=str))
"""


def _sealed_key(*banned: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", SEALED_KEY, *banned], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def keyed():
    return _sealed_key("reference")


def test_a_sealed_call_ends_with_the_keyed_digest_of_its_nonce_report_and_values(keyed):
    hits = keyed["sealed"]
    assert hits[:-1] == ["math.sqrt"] and hits[-1].startswith("seal:"), hits
    assert hits[-1] == keyed["expected"], "the suite, holding the key, computes the same seal"
    assert hits[-1] != keyed["other_nonce"], "a seal is good for its own request only"


def test_the_suites_file_read_as_text_is_banned_by_its_code_and_noted(keyed):
    hits = keyed["stolen"]
    assert "the suite's reference/layer_norm.py (run from its source text)" in hits, hits
    assert any(h.startswith("review: read the suite's file reference/layer_norm.py as text") for h in hits), hits


def test_a_suite_file_the_rubric_does_not_ban_may_be_read_and_run():
    """Only what the rubric bans is banned by its code: a known bug built on impls/mutants/_base.py whose numpy
    warning made `warnings` read its source line was failed for running _base's code, under a rubric banning
    nothing. The read is still noted for review."""
    hits = _sealed_key()["stolen"]
    assert not any("run from its source text" in h for h in hits), hits
    assert any(h.startswith("review: read the suite's file reference/layer_norm.py as text") for h in hits), hits
