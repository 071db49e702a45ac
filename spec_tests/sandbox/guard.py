"""The worker's watch on what the rubric bans: functions by name, PyTorch operators by what runs.

Installed by the worker before it imports the implementation, in three layers:

1. A call watch (`sys.setprofile`) sees every Python function and builtin the implementation
   calls: a banned module (`reference`), function or class, by its code or identity.
2. When PyTorch is loaded, a TorchFunctionMode sees every torch API call (by the function
   object, whatever name reached it: `F.layer_norm`, `torch._C._nn.scaled_dot_product_attention`)
   and a TorchDispatchMode sees every operator that reaches the dispatcher, including
   `torch.ops.aten.*` aliases and private variants: banned operators are named by their schema
   (`aten::native_layer_norm`, `aten::_scaled_dot_product_*`, fnmatch patterns).
3. An audit hook (`sys.addaudithook`; it cannot be removed) owns the watch's state. The worker
   talks to it only through `sys.audit("mha_spec.guard", ...)` with `sys.audit` captured before the
   implementation was imported, so nothing the implementation replaces in `sys.modules` or in the
   worker's module reaches it. Before and after every call the hook checks the watch from outside
   the implementation's reach: the profile function is still its own, the two modes sit on
   PyTorch's mode stacks, the stack functions are PyTorch's own builtins; during a call it
   treats as tampering a call of the stack functions or of sys.setprofile, a new thread (modes are
   per thread), walking the garbage collector's objects (gc.get_objects, get_referrers),
   ctypes calls, and setting attributes on the watch's classes. Tampering is a ban violation.

Limits, said plainly: all of this runs in the implementation's own process; it stops the ways
one can reach the watch from Python without native code, not a native extension of one's own,
and code of the implementation that runs outside a call (an object's __array__ while its result
is converted) is not watched.
"""

from __future__ import annotations

import fnmatch
import inspect
import sys
from types import ModuleType

EVENT = "mha_spec.guard"

# Banning one of these names bans the operators behind it too (so old rubrics hold at the dispatcher).
FUNCTION_OPS = {
    "torch.nn.functional.scaled_dot_product_attention": (
        "aten::scaled_dot_product_attention", "aten::_scaled_dot_product_*", "aten::_safe_softmax",
        "aten::_fused_sdp_choice"),
    "torch.nn.functional.layer_norm": ("aten::layer_norm", "aten::native_layer_norm*"),
    "torch.nn.LayerNorm": ("aten::layer_norm", "aten::native_layer_norm*"),
    "torch.layer_norm": ("aten::layer_norm", "aten::native_layer_norm*"),
    "torch.native_layer_norm": ("aten::layer_norm", "aten::native_layer_norm*"),
    "torch.nn.MultiheadAttention": ("aten::_native_multi_head_attention", "aten::_transform_bias_rescale_qkv",
                                    "aten::_masked_softmax*"),
    "torch.nn.functional.multi_head_attention_forward": ("aten::_native_multi_head_attention",
                                                         "aten::_transform_bias_rescale_qkv", "aten::_masked_softmax*"),
}
# torch._C functions that change or bypass the mode stacks: calling one during a call is tampering.
STACK_FUNCTIONS = ("_pop_torch_dispatch_stack", "_push_on_torch_dispatch_stack", "_pop_torch_function_stack",
                   "_push_on_torch_function_stack", "_set_dispatch_mode", "_unset_dispatch_mode",
                   "_DisableTorchDispatch", "DisableTorchFunction", "DisableTorchFunctionSubclass",
                   "_DisablePythonDispatcher", "_ExcludeDispatchKeyGuard", "_get_dispatch_stack_at",
                   "_get_function_stack_at")
TAMPER_EVENTS = ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "ctypes.call_function", "ctypes.cdata",
                 "ctypes.dlsym", "sys._current_frames")


def _lookup(name: str):
    parts = name.split(".")
    obj = sys.modules.get(parts[0])
    for i, part in enumerate(parts[1:], 1):
        if obj is None:
            return None
        nxt = getattr(obj, part, None)
        if nxt is None:
            nxt = sys.modules.get(".".join(parts[: i + 1]))
        obj = nxt
    return obj


class _Names:
    """Banned names resolved to code objects, builtins and module prefixes, as modules get imported."""

    def __init__(self, names):
        self.names = [str(n) for n in names]
        self.prefixes = tuple(self.names)
        self.codes: dict = {}
        self.builtins: dict[int, str] = {}
        self.objects: dict[int, str] = {}  # every resolved callable: the function mode matches these
        self.pending = list(self.names)
        self._held: list = []
        self._modules_seen = -1

    def resolve(self) -> bool:
        """Resolve the names whose modules are now imported; True when something new was found."""
        if len(sys.modules) == self._modules_seen:
            return False
        self._modules_seen = len(sys.modules)
        before = len(self.codes) + len(self.builtins) + len(self.objects)
        still = []
        for name in self.pending:
            if name.split(".")[0] not in sys.modules:
                still.append(name)
                continue
            obj = _lookup(name)
            if obj is None or inspect.ismodule(obj):
                if obj is None and name.split(".")[0] in sys.modules and "." in name:
                    still.append(name)  # a submodule not imported yet
                continue
            self._held.append(obj)
            self.objects[id(obj)] = name
            if inspect.isclass(obj):
                for value in vars(obj).values():
                    fn = getattr(value, "__func__", value)
                    if hasattr(fn, "__code__"):
                        self.codes[fn.__code__] = name
            elif hasattr(obj, "__code__"):
                self.codes[obj.__code__] = name
            else:
                self.builtins[id(obj)] = name
        self.pending = still
        return len(self.codes) + len(self.builtins) + len(self.objects) != before


def install(names, ops) -> None:
    """Install the watch for banned `names` (functions, classes, modules) and `ops` (operator patterns)."""
    audit, setprofile, getprofile, gettrace = sys.audit, sys.setprofile, sys.getprofile, sys.gettrace
    names = [str(n) for n in names]
    patterns = tuple(dict.fromkeys([str(o) for o in ops] + [p for n in names for p in FUNCTION_OPS.get(n, ())]))
    resolved = _Names(names)
    state = {"in_call": False, "hits": [], "tamper": [], "import_tamper": [], "torch": None, "profiled": False}
    tamper_ids: dict[int, str] = {id(sys.setprofile): "sys.setprofile", id(sys.settrace): "sys.settrace"}
    held = [sys.setprofile, sys.settrace]
    try:
        import _thread

        tamper_ids[id(_thread.start_new_thread)] = "a new thread"
        held.append(_thread.start_new_thread)
    except ImportError:
        pass
    op_cache: dict[str, bool] = {}

    def hit(name: str) -> None:
        if state["in_call"] and name and name not in state["hits"]:
            state["hits"].append(name)

    def tampered(what: str) -> None:
        where = state["tamper"] if state["in_call"] else state["import_tamper"]
        if what not in where:
            where.append(what)

    def op_banned(name: str) -> bool:
        found = op_cache.get(name)
        if found is None:
            found = op_cache[name] = any(fnmatch.fnmatchcase(name, p) for p in patterns)
        return found

    c_names: dict[int, str | None] = {}  # builtin id -> the banned operator it is, or None
    op_codes: dict = {}  # code of torch.ops' __call__ methods (an operator called by any alias)

    def builtin_op(arg) -> str | None:
        key = id(arg)
        if key in c_names:
            return c_names[key]
        name = getattr(arg, "__name__", None)
        owner = getattr(arg, "__module__", None) or getattr(getattr(arg, "__self__", None), "__name__", "") or ""
        found = None
        if isinstance(name, str) and isinstance(owner, str) and owner.startswith("torch") and \
                op_banned(f"aten::{name}"):
            found = f"{owner}.{name}"
            held.append(arg)
        c_names[key] = found
        return found

    def from_torch(frame) -> bool:
        return bool(torch_dir) and frame.f_code.co_filename.startswith(torch_dir[0])

    torch_dir: list[str] = []

    innocent: dict = {}  # code objects and builtin ids already found harmless: the fast path

    def profile(frame, event, arg):
        if event == "call":
            code = frame.f_code
            if id(code) in innocent or not state["in_call"]:  # a code object hashes by its contents: slow
                return
            if resolved.pending and resolved.resolve():
                innocent.clear()
            name = resolved.codes.get(code)
            if name is None:
                module = frame.f_globals.get("__name__") or ""
                if resolved.prefixes and module.startswith(resolved.prefixes):
                    name = next((p for p in resolved.names if module == p or module.startswith(p + ".")), None)
            if name is None and code in op_codes:  # torch.ops.aten.X(...) or one of its overloads
                op = frame.f_locals.get("self")
                schema = getattr(op, "_schema", None)
                qual = schema.name if schema is not None else getattr(op, "_qualified_op_name", "")
                if isinstance(qual, str) and (op_banned(qual) or op_banned(qual.replace("::", "::_", 1))):
                    name = qual
            elif name is None:
                innocent[id(code)] = code  # held, so that its id is not reused
                return
            if name is not None:
                hit(name)
        elif event == "c_call":
            key = id(arg)
            if key in innocent or not state["in_call"]:
                return
            owner = getattr(arg, "__self__", None)
            bound = not (owner is None or isinstance(owner, (type, ModuleType)))
            if bound:  # a method bound to an object (a new one each time): by the object's type and its name
                typed = (type(owner), getattr(arg, "__name__", None))
                if typed in innocent:
                    return
            if resolved.pending and resolved.resolve():
                innocent.clear()
            name = resolved.builtins.get(key)
            if name is None and patterns:
                name = builtin_op(arg)
            what = tamper_ids.get(key)
            if name is None and what is None:
                if bound:
                    innocent[typed] = True
                else:
                    innocent[key] = arg  # held, so that its id is not reused by a banned builtin
                return
            if name is not None:
                hit(name)
            if what is not None and not from_torch(frame):
                tampered(f"{what} (the grader's watch must stay as it is during a call)")

    torch_state: dict = {}

    def setup_torch() -> None:
        """Build the two modes, with PyTorch's own stack functions (checked to be its builtins)."""
        torch = sys.modules["torch"]
        C = sys.modules.get("torch._C")
        fns = {}
        for fname in STACK_FUNCTIONS + ("_len_torch_dispatch_stack", "_len_torch_function_stack"):
            fn = C.__dict__.get(fname) if C is not None else None
            genuine = fn is not None and (
                (type(fn).__name__ == "builtin_function_or_method" and getattr(fn, "__self__", None) is C
                 and fn.__name__ == fname) or (isinstance(fn, type) and fn.__module__.startswith("torch")))
            if not genuine:
                tampered(f"torch._C.{fname} was replaced")
                state["torch"] = "broken"
                return
            fns[fname] = fn
            if fname in STACK_FUNCTIONS:
                tamper_ids[id(fn)] = f"torch._C.{fname}"
                held.append(fn)
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode
        import torch._ops as ops_module
        import os

        torch_dir.append(os.path.dirname(ops_module.__file__) + os.sep)
        for cls in (ops_module.OpOverloadPacket, ops_module.OpOverload):
            call = vars(cls).get("__call__")
            if hasattr(call, "__code__"):
                op_codes[call.__code__] = cls.__name__

        class _DispatchWatch(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                name = func._schema.name
                if op_banned(name) or op_banned(name.replace("::", "::_", 1)):
                    hit(name)
                return func(*args, **(kwargs or {}))

        class _FunctionWatch(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                name = resolved.objects.get(id(func))
                if name is not None:
                    hit(name)
                else:
                    qual = getattr(func, "__name__", "")
                    if qual and op_banned(f"aten::{qual}"):
                        hit(f"torch.{qual}")
                return func(*args, **(kwargs or {}))

        # PyTorch wraps a mode's __torch_dispatch__ to keep torch.compile out, importing torch._dynamo (900
        # modules, seconds, ~100 MB) on the first operator; the plain function needs no such wrapper here.
        wrapped = getattr(vars(_DispatchWatch)["__torch_dispatch__"], "__wrapped__", None)
        if wrapped is not None:
            setattr(wrapped, "__dynamo_disable", wrapped)
        innocent.clear()  # the stack functions and operator calls are watched from now on
        torch_state.update(fns=fns, dispatch=_DispatchWatch(), function=_FunctionWatch(),
                           classes=(_DispatchWatch, _FunctionWatch, TorchDispatchMode, TorchFunctionMode),
                           dicts=(dict(vars(_DispatchWatch)), dict(vars(_FunctionWatch))), torch=torch)
        state["torch"] = "ready"

    def modes_ok() -> bool:
        f = torch_state["fns"]
        nd, nf = f["_len_torch_dispatch_stack"](), f["_len_torch_function_stack"]()
        return (nd > 0 and nf > 0 and f["_get_dispatch_stack_at"](nd - 1) is torch_state["dispatch"]
                and f["_get_function_stack_at"](nf - 1) is torch_state["function"]
                and all(dict(vars(c)) == d for c, d in zip(torch_state["classes"], torch_state["dicts"])))

    def begin() -> None:
        state["hits"], state["tamper"] = [], []
        resolved.resolve()
        if "torch" in sys.modules and state["torch"] is None:
            setup_torch()
        if state["torch"] == "ready":
            f = torch_state["fns"]
            f["_push_on_torch_function_stack"](torch_state["function"])
            f["_push_on_torch_dispatch_stack"](torch_state["dispatch"])
        state["in_call"] = True
        state["profiled"] = profile_needed()
        if state["profiled"]:
            setprofile(profile)

    tops = {n.split(".")[0] for n in names}

    def profile_needed() -> bool:
        """The call watch costs a Python call per function call (3-7 times slower pure-Python loops): it runs
        only when something it watches is loaded (PyTorch, a banned module's package), or gets loaded."""
        return any(t in sys.modules for t in tops) or ("torch" in sys.modules and bool(patterns))

    def end(out: list) -> None:
        still = (getprofile() is profile or not state["profiled"]) and gettrace() is None
        state["in_call"] = False
        setprofile(None)
        problems = list(state["tamper"]) + list(state["import_tamper"])
        if not still:
            problems.append("sys.setprofile or sys.settrace (the submission switched off the grader's call watch, "
                            "or installed a tracer of its own)")
        if state["torch"] == "ready":
            if modes_ok():
                f = torch_state["fns"]
                f["_pop_torch_dispatch_stack"](None)
                f["_pop_torch_function_stack"]()
            else:  # this call fails; the next one starts with the two modes pushed again
                problems.append("PyTorch's mode stack (the submission removed or replaced the grader's operator "
                                "watch)")
                f = torch_state["fns"]
                for length, at, pop, mine in (("_len_torch_dispatch_stack", "_get_dispatch_stack_at",
                                               lambda: f["_pop_torch_dispatch_stack"](None), "dispatch"),
                                              ("_len_torch_function_stack", "_get_function_stack_at",
                                               f["_pop_torch_function_stack"], "function")):
                    n = f[length]()
                    if n and f[at](n - 1) is torch_state[mine]:
                        pop()
        elif state["torch"] == "broken":
            problems.append("PyTorch's mode stack functions (replaced, so the operator watch cannot run)")
        hits = state["hits"]
        implied = [p for h in hits if "::" not in h for p in FUNCTION_OPS.get(h, ())]
        hits = [h for h in hits if not ("::" in h and any(fnmatch.fnmatchcase(h, p) for p in implied))]
        out += hits + [f"tampering with the grader: {p}" for p in problems]  # operators named once, by function
        state["hits"], state["tamper"] = [], []

    def hook(event, args):
        if event == EVENT:
            command = args[0]
            if command == "begin" and not state["in_call"]:
                begin()
            elif command == "end" and state["in_call"] and len(args) > 1 and isinstance(args[1], list):
                end(args[1])
            else:  # a call out of order: someone other than the worker
                tampered(f"sys.audit({EVENT!r}, {command!r}) called out of order")
            return
        if event == "import" and state["in_call"] and not state["profiled"] and isinstance(args[0], str) and (
                args[0].split(".")[0] in tops or (args[0].split(".")[0] == "torch" and patterns)):
            state["profiled"] = True  # a watched package is being imported during the call: watch from now on
            setprofile(profile)
        elif event in TAMPER_EVENTS and (state["in_call"] or not event.startswith("ctypes.")):
            tampered(event)
        elif event == "object.__setattr__" and torch_state and args and args[0] in torch_state["classes"]:
            tampered(f"setting {getattr(args[0], '__name__', '?')}.{args[1]}")
        elif event == "sys.addaudithook" and state["in_call"]:
            tampered("sys.addaudithook")

    sys.addaudithook(hook)
    del audit


def watch(audit, hits: list, fn, *args, **kwargs):
    """Run fn under the watch; what it used that is banned is added to `hits`. `audit` is sys.audit as
    the worker captured it at start-up (the worker also holds this function from before the import)."""
    if audit is None:
        return fn(*args, **kwargs)
    audit(EVENT, "begin")
    try:
        return fn(*args, **kwargs)
    finally:
        audit(EVENT, "end", hits)
