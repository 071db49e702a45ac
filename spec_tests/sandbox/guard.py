"""The worker's watch on what the rubric bans: functions by name, PyTorch operators by what runs.

Installed by the worker before it imports the implementation, in three layers:

1. A call watch (`sys.setprofile`) sees every Python function and builtin the implementation
   calls: a banned module (`reference`), function or class, by its code or identity.
2. When PyTorch is loaded, a TorchFunctionMode sees every torch API call (by the function
   object, whatever name reached it: `F.layer_norm`, `torch._C._nn.scaled_dot_product_attention`)
   and a TorchDispatchMode sees every operator that reaches the dispatcher, including
   `torch.ops.aten.*` aliases and private variants: banned operators are named by their schema
   (`aten::native_layer_norm`, `aten::_scaled_dot_product_*`, fnmatch patterns).
3. An audit hook (`sys.addaudithook`; it cannot be removed) owns the watch's state: `install` makes
   the one `Watch` object and registers a hook that is a closure over it (and over the event's name, the
   code of `watch()` and a snapshot of this module's globals and its classes' dicts, compared and put back at
   every begin and end), and keeps no other reference. The worker
   talks to it only through `sys.audit("mha_spec.guard", ...)` with `sys.audit` captured before the
   implementation was imported, so nothing the implementation replaces in `sys.modules` or in the
   worker's module reaches it. Before and after every call the hook checks the watch from outside
   the implementation's reach: the profile function is still its own, the two modes sit on
   PyTorch's mode stacks, the stack functions are PyTorch's own builtins; during a call it
   treats as tampering a call of the stack functions or of sys.setprofile, a new thread (modes are
   per thread), walking the garbage collector's objects (gc.get_objects, get_referrers),
   ctypes calls, and setting attributes on the watch's classes (the audited ones, `__class__`,
   `__bases__`, `__name__`...; after a call the two modes' classes are compared with what they were).
   Tampering is a ban violation.

4. Each call of the worker's is sealed (watch_sealed, seal): at its end the hook appends a keyed digest of the
   request's nonce, its report and the values returned, with a key the suite sent before anything was imported
   and only the hook holds; the suite checks it. A result is checked to be a plain array inside the call, so
   converting it afterwards runs no code of the implementation's. The suite's files read as text (not imported)
   are noted for review, and every function compiled from them is banned by its code.

Limits, said plainly: all of this runs in the implementation's own process; it stops the ways
above of reaching the watch from Python without native code, not a native extension of one's own.
Not every path to the watch's own objects is closed: during a call `sys.getprofile()` returns the
watch's bound method, and `TorchDispatchMode.__subclasses__()` lists the modes' classes, whose
methods refer to the watch; code that goes looking through these reaches it and can change its state
(what it reaches cannot make a seal, and the classes and this module are compared at every call).
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
        self.bound: dict[tuple, str] = {}  # (id of its object, name) of a banned builtin bound to an object
        self.pending = list(self.names)
        self._held: list = []
        self._modules_seen = -1
        self._partial = False  # a pending name's module is in sys.modules but lacks it (still being imported)

    def resolve(self) -> bool:
        """Resolve the names whose modules are now imported; True when something new was found.

        Skipped while sys.modules has not changed, unless a pending name's module is there without it yet:
        a module is in sys.modules before its body has run, so that name is looked up again until it is found."""
        if len(sys.modules) == self._modules_seen and not self._partial:
            return False
        self._modules_seen = len(sys.modules)
        before = len(self.codes) + len(self.builtins) + len(self.objects)
        still, partial = [], False
        for name in self.pending:
            if name.split(".")[0] not in sys.modules:
                still.append(name)
                continue
            obj = _lookup(name)
            if obj is None or inspect.ismodule(obj):
                if obj is None and "." in name:
                    still.append(name)  # a submodule not imported yet, or a module whose body is still running
                    partial = partial or ".".join(name.split(".")[:-1]) in sys.modules
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
                owner = getattr(obj, "__self__", None)
                if not (owner is None or isinstance(owner, (type, ModuleType))):  # random.random: a bound method
                    self.bound[(id(owner), getattr(obj, "__name__", None))] = name
                    self._held.append(owner)
        self.pending, self._partial = still, partial
        return len(self.codes) + len(self.builtins) + len(self.objects) != before


class Watch:
    """The watch itself: its state and the callbacks that use it. install() makes the one instance and
    registers its `hook` as an audit hook, which owns it from then on: the worker holds no reference to it
    and reaches it only through the captured sys.audit(EVENT, ...).

    __slots__: the instance has no __dict__, so none of its methods can be shadowed on it."""

    __slots__ = ("names", "tops", "patterns", "resolved", "in_call", "profiled", "torch", "hits", "tamper",
                 "import_tamper", "tamper_ids", "held", "op_cache", "c_names", "op_codes", "torch_dir", "innocent",
                 "modes", "setprofile", "getprofile", "gettrace", "own_profile", "noted", "stolen")

    def __init__(self, names, ops):
        # Captured before the implementation is imported: what it later replaces in sys does not reach these.
        self.setprofile, self.getprofile, self.gettrace = sys.setprofile, sys.getprofile, sys.gettrace
        self.names = [str(n) for n in names]
        self.tops = {n.split(".")[0] for n in self.names}
        self.patterns = tuple(dict.fromkeys([str(o) for o in ops] +
                                            [p for n in self.names for p in FUNCTION_OPS.get(n, ())]))
        self.resolved = _Names(self.names)
        self.in_call, self.profiled = False, False
        self.torch = None  # None until PyTorch is set up, then "ready", or "broken" (its stack functions replaced)
        self.hits, self.tamper, self.import_tamper = [], [], []  # import_tamper: outside a call, reported ever after
        self.noted: list[str] = []  # changes to the watch's code outside a call, put back: for review, once
        self.stolen: dict = {}  # signature of a function of the suite's files read as text -> which file
        self.tamper_ids: dict[int, str] = {id(sys.setprofile): "sys.setprofile", id(sys.settrace): "sys.settrace",
                                           id(sys.getprofile): "sys.getprofile"}  # getprofile: the watch's method
        self.held = [sys.setprofile, sys.settrace, sys.getprofile]  # what tamper_ids and c_names name, so that ids are not reused
        try:
            import _thread

            self.tamper_ids[id(_thread.start_new_thread)] = "a new thread"
            self.held.append(_thread.start_new_thread)
        except ImportError:
            pass
        self.op_cache: dict[str, bool] = {}
        self.c_names: dict[int, str | None] = {}  # builtin id -> the banned operator it is, or None
        self.op_codes: dict = {}  # code of torch.ops' __call__ methods (an operator called by any alias)
        self.torch_dir = ""  # PyTorch's own folder: its code may use the stack functions
        self.innocent: dict = {}  # code objects and builtin ids already found harmless: the fast path
        self.modes: dict = {}  # once PyTorch is set up: its stack functions, the two modes and their classes
        self.own_profile = self.profile  # the one bound method given to sys.setprofile: getprofile() is it

    # -- what was seen ------------------------------------------------------------------
    def hit(self, name: str) -> None:
        if self.in_call and name and name not in self.hits:
            self.hits.append(name)

    def tampered(self, what: str) -> None:
        where = self.tamper if self.in_call else self.import_tamper
        if what not in where:
            where.append(what)

    def op_banned(self, name: str) -> bool:
        found = self.op_cache.get(name)
        if found is None:
            found = self.op_cache[name] = any(fnmatch.fnmatchcase(name, p) for p in self.patterns)
        return found

    def op_or_private_banned(self, name: str) -> bool:
        """An operator banned by its schema name, or as the public twin of a banned private one (aten::_x)."""
        return self.op_banned(name) or self.op_banned(name.replace("::", "::_", 1))

    def resolve(self) -> None:
        """Resolve the banned names whose modules got imported; what was found harmless is looked at again."""
        if self.resolved.pending and self.resolved.resolve():
            self.innocent.clear()
            self.c_names.clear()

    # -- the call watch (sys.setprofile) ----------------------------------------------------
    def profile(self, frame, event, arg):
        """The profile function during a call: every Python function and builtin the implementation calls."""
        if event == "call":
            code = frame.f_code
            if id(code) in self.innocent or not self.in_call:  # a code object hashes by its contents: slow
                return
            self.resolve()
            name = self.code_name(frame, code)
            if name is not None:
                self.hit(name)
        elif event == "c_call":
            key = id(arg)
            if key in self.innocent or not self.in_call:
                return
            owner = getattr(arg, "__self__", None)
            bound = not (owner is None or isinstance(owner, (type, ModuleType)))
            self.resolve()
            name = self.resolved.builtins.get(key)
            if bound:  # a method bound to an object (a new one each time): by the object's type and its name,
                method = getattr(arg, "__name__", None)  # after the banned ones bound to their own object
                name = name or self.resolved.bound.get((id(owner), method))
                typed = (type(owner), method)
                if name is None and typed in self.innocent:
                    return
            if name is None and self.patterns:
                name = self.builtin_op(arg)
            what = self.tamper_ids.get(key)
            if name is None and what is None:
                if bound:
                    self.innocent[typed] = True
                else:
                    self.innocent[key] = arg  # held, so that its id is not reused by a banned builtin
                return
            if name is not None:
                self.hit(name)
            if what is not None and not self.from_torch(frame):
                self.tampered(f"{what} (the grader's watch must stay as it is during a call)")

    def code_name(self, frame, code) -> str | None:
        """The banned name a Python function is (its code, its module, the operator torch.ops calls), or None;
        a function that is none of these, nor torch.ops' __call__, is innocent from now on."""
        name = self.resolved.codes.get(code)
        if name is None and self.stolen:  # the suite's code, compiled from its text under another name
            name = self.stolen.get((code.co_code, code.co_names, code.co_varnames, code.co_argcount))
        if name is None:
            module = frame.f_globals.get("__name__") or ""
            if self.resolved.prefixes and module.startswith(self.resolved.prefixes):
                name = next((p for p in self.resolved.names if module == p or module.startswith(p + ".")), None)
        if name is None and code in self.op_codes:  # torch.ops.aten.X(...) or one of its overloads
            op = frame.f_locals.get("self")
            schema = getattr(op, "_schema", None)
            qual = schema.name if schema is not None else getattr(op, "_qualified_op_name", "")
            if isinstance(qual, str) and self.op_or_private_banned(qual):
                name = qual
        elif name is None:
            self.innocent[id(code)] = code  # held, so that its id is not reused
        return name

    def builtin_op(self, arg) -> str | None:
        """The banned operator a builtin of PyTorch's is, by its name (`torch.native_layer_norm`), or None."""
        key = id(arg)
        if key in self.c_names:
            return self.c_names[key]
        name = getattr(arg, "__name__", None)
        owner = getattr(arg, "__module__", None) or getattr(getattr(arg, "__self__", None), "__name__", "") or ""
        found = None
        if isinstance(name, str) and isinstance(owner, str) and owner.startswith("torch") and \
                self.op_banned(f"aten::{name}"):
            found = f"{owner}.{name}"
            self.held.append(arg)
        self.c_names[key] = found
        return found

    def from_torch(self, frame) -> bool:
        return bool(self.torch_dir) and frame.f_code.co_filename.startswith(self.torch_dir)

    def profile_needed(self) -> bool:
        """The call watch costs a Python call per function call (3-7 times slower pure-Python loops): it runs
        only when something it watches is loaded (PyTorch, a banned module's package), or gets loaded."""
        return any(t in sys.modules for t in self.tops) or ("torch" in sys.modules and bool(self.patterns)) or \
            bool(self.stolen)

    def read_suite(self, path: str, where: str, source) -> None:
        """The implementation read one of the suite's files as text (not by importing it): for review, and every
        function in it (when it is Python) is banned by its code from now on, under whatever name it is run."""
        note = f"read the suite's file {path} as text, at {where}"
        if note not in self.noted:  # reading fails nothing: running what was read is what is banned
            self.noted.append(note)
        module = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".").strip(".")
        if source is None or not any(module == n or module.startswith(n + ".") for n in self.names):
            return  # a file the rubric does not ban (a warning's source line, say): running its code is allowed
        found, todo = 0, [source]
        while todo:
            code = todo.pop()
            self.stolen[(code.co_code, code.co_names, code.co_varnames, code.co_argcount)] = \
                f"the suite's {path} (run from its source text)"
            found += 1
            todo += [c for c in code.co_consts if hasattr(c, "co_code")]
        self.innocent.clear()

    # -- PyTorch's two modes --------------------------------------------------------------
    def stack_functions(self) -> dict | None:
        """PyTorch's own mode stack functions, each checked to be its builtin; None (tampering) if one is not."""
        C = sys.modules.get("torch._C")
        fns = {}
        for fname in STACK_FUNCTIONS + ("_len_torch_dispatch_stack", "_len_torch_function_stack"):
            fn = C.__dict__.get(fname) if C is not None else None
            genuine = fn is not None and (
                (type(fn).__name__ == "builtin_function_or_method" and getattr(fn, "__self__", None) is C
                 and fn.__name__ == fname) or (isinstance(fn, type) and fn.__module__.startswith("torch")))
            if not genuine:
                self.tampered(f"torch._C.{fname} was replaced")
                return None
            fns[fname] = fn
            if fname in STACK_FUNCTIONS:
                self.tamper_ids[id(fn)] = f"torch._C.{fname}"
                self.held.append(fn)
        return fns

    def mode_classes(self) -> tuple:
        """The TorchDispatchMode (every operator at the dispatcher) and TorchFunctionMode (every torch API call,
        by the function object) of the watch, and their bases."""
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        watch = self

        class _DispatchWatch(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                name = func._schema.name
                if watch.op_or_private_banned(name):
                    watch.hit(name)
                return func(*args, **(kwargs or {}))

        class _FunctionWatch(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                name = watch.resolved.objects.get(id(func))
                if name is not None:
                    watch.hit(name)
                else:
                    qual = getattr(func, "__name__", "")
                    if qual and watch.op_banned(f"aten::{qual}"):
                        watch.hit(f"torch.{qual}")
                return func(*args, **(kwargs or {}))

        # PyTorch wraps a mode's __torch_dispatch__ to keep torch.compile out, importing torch._dynamo (900
        # modules, seconds, ~100 MB) on the first operator; the plain function needs no such wrapper here.
        wrapped = getattr(vars(_DispatchWatch)["__torch_dispatch__"], "__wrapped__", None)
        if wrapped is not None:
            setattr(wrapped, "__dynamo_disable", wrapped)
        return _DispatchWatch, _FunctionWatch, TorchDispatchMode, TorchFunctionMode

    def setup_torch(self) -> None:
        """Build the two modes, with PyTorch's own stack functions (checked to be its builtins)."""
        torch = sys.modules["torch"]
        fns = self.stack_functions()
        if fns is None:
            self.torch = "broken"
            return
        import torch._ops as ops_module
        import os

        self.torch_dir = os.path.dirname(ops_module.__file__) + os.sep
        for cls in (ops_module.OpOverloadPacket, ops_module.OpOverload):
            call = vars(cls).get("__call__")
            if hasattr(call, "__code__"):
                self.op_codes[call.__code__] = cls.__name__
        classes = self.mode_classes()
        self.innocent.clear()  # the stack functions and operator calls are watched from now on
        self.modes.update(fns=fns, dispatch=classes[0](), function=classes[1](), classes=classes,
                          dicts=(dict(vars(classes[0])), dict(vars(classes[1]))), torch=torch)
        self.torch = "ready"

    def modes_ok(self) -> bool:
        """The two modes on top of PyTorch's mode stacks, their classes unchanged."""
        f = self.modes["fns"]
        nd, nf = f["_len_torch_dispatch_stack"](), f["_len_torch_function_stack"]()
        return (nd > 0 and nf > 0 and f["_get_dispatch_stack_at"](nd - 1) is self.modes["dispatch"]
                and f["_get_function_stack_at"](nf - 1) is self.modes["function"]
                and all(dict(vars(c)) == d for c, d in zip(self.modes["classes"], self.modes["dicts"])))

    def pop_modes(self, problems: list) -> None:
        """Take the two modes off the stacks after a call; if they are not where begin() put them, that is a
        problem, and whichever of them is still on top is popped (the next call pushes both again)."""
        f = self.modes["fns"]
        if self.modes_ok():
            f["_pop_torch_dispatch_stack"](None)
            f["_pop_torch_function_stack"]()
            return
        problems.append("PyTorch's mode stack (the submission removed or replaced the grader's operator watch)")
        for length, at, pop, mine in (("_len_torch_dispatch_stack", "_get_dispatch_stack_at",
                                       lambda: f["_pop_torch_dispatch_stack"](None), "dispatch"),
                                      ("_len_torch_function_stack", "_get_function_stack_at",
                                       f["_pop_torch_function_stack"], "function")):
            n = f[length]()
            if n and f[at](n - 1) is self.modes[mine]:
                pop()

    # -- a call -------------------------------------------------------------------------
    def begin(self) -> None:
        self.hits, self.tamper = [], []
        self.resolve()  # what was found harmless before a banned name resolved is looked at again
        if "torch" in sys.modules and self.torch is None and (self.names or self.patterns):
            self.setup_torch()
        if self.torch == "ready":
            f = self.modes["fns"]
            f["_push_on_torch_function_stack"](self.modes["function"])
            f["_push_on_torch_dispatch_stack"](self.modes["dispatch"])
        self.in_call = True
        self.profiled = self.profile_needed()
        if self.profiled:
            self.setprofile(self.own_profile)

    def end(self, out: list) -> None:
        """After a call: the watch off again, and what was banned or tampered with added to `out`."""
        still = (self.getprofile() is self.own_profile or not self.profiled) and self.gettrace() is None
        self.in_call = False
        self.setprofile(None)
        problems = list(self.tamper) + list(self.import_tamper)
        if not still:
            problems.append("sys.setprofile or sys.settrace (the submission switched off the grader's call watch, "
                            "or installed a tracer of its own)")
        if self.torch == "ready":
            self.pop_modes(problems)  # a call that moved them fails; the next one starts with them pushed again
        elif self.torch == "broken":
            problems.append("PyTorch's mode stack functions (replaced, so the operator watch cannot run)")
        hits = self.hits
        implied = [p for h in hits if "::" not in h for p in FUNCTION_OPS.get(h, ())]
        hits = [h for h in hits if not ("::" in h and any(fnmatch.fnmatchcase(h, p) for p in implied))]
        out += hits + [f"tampering with the grader: {p}" for p in problems]  # operators named once, by function
        out += [f"{REVIEW}{n}" for n in self.noted]
        self.noted = []
        self.hits, self.tamper = [], []

    # -- the audit hook (install() makes it: a closure, so that nothing it reads is looked up at run time) ----
    def event(self, event, args, tamper_events) -> None:
        """An audit event other than the worker's own: what would reach the watch, or import a watched package."""
        if event == "import" and self.in_call and not self.profiled and isinstance(args[0], str) and (
                args[0].split(".")[0] in self.tops or (args[0].split(".")[0] == "torch" and self.patterns)):
            self.profiled = True  # a watched package is being imported during the call: watch from now on
            self.setprofile(self.own_profile)
        elif event in tamper_events and (self.in_call or not event.startswith("ctypes.")):
            self.tampered(event)
        elif event == "object.__setattr__" and args and (
                args[0] is self or args[0] is Watch or (self.modes and args[0] in self.modes["classes"])):
            self.tampered(f"setting {getattr(args[0], '__name__', type(args[0]).__name__)}.{args[1]}")
        elif event == "sys.addaudithook" and self.in_call:
            self.tampered("sys.addaudithook")


_MISSING = object()


class _Seal:
    """What the watch's code looks up at run time, as it was at install: this module's globals and the dicts of
    its classes (a class attribute or a module global set from Python raises no audit event). Compared at the
    begin and the end of every call: anything changed is put back, and reported as tampering."""

    def __init__(self, module, classes):
        self.module, self.globals = module, dict(vars(module))
        self.classes = [(c, dict(vars(c))) for c in classes]

    def broken(self) -> list[str]:
        found = []
        now = vars(self.module)
        if now != self.globals:
            changed = sorted(k for k in set(now) | set(self.globals) if now.get(k, _MISSING) is not
                             self.globals.get(k, _MISSING))
            found.append(f"the grader's watch module was changed ({', '.join(changed)[:200]})")
            now.clear()
            now.update(self.globals)
        for cls, saved in self.classes:
            if vars(cls) != saved:
                changed = sorted(k for k in set(vars(cls)) | set(saved) if vars(cls).get(k, _MISSING) is not
                                 saved.get(k, _MISSING))
                found.append(f"the grader's {cls.__name__} class was changed ({', '.join(changed)[:200]})")
                for k in changed:
                    if k in saved:
                        type.__setattr__(cls, k, saved[k])
                    else:
                        type.__delattr__(cls, k)
        return found


REVIEW = "review: "  # an entry of a call's report that fails nothing but marks the submission for review
SEAL = "seal:"  # the last entry of a sealed call's report: its keyed digest (seal())
DENIED = ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames")  # raise, not only report


def canonical(value, parts: list) -> list:
    """A value made of arrays, scalars, tuples, lists and dicts as bytes, the same on both sides of the wire (an
    array by its dtype, shape and bytes; a scalar by its repr, NumPy's as Python's)."""
    kind = type(value)
    if kind.__name__ == "ndarray" and kind.__module__ == "numpy":
        parts += [b"a", value.dtype.str.encode(), repr(tuple(int(n) for n in value.shape)).encode(), value.tobytes()]
    elif kind in (tuple, list):
        parts.append(b"t%d" % len(value))
        for v in value:
            canonical(v, parts)
    elif kind is dict:
        parts.append(b"d%d" % len(value))
        for k, v in value.items():
            parts.append(repr(str(k)).encode())
            canonical(v, parts)
    else:
        item = getattr(value, "item", None)
        if kind.__module__ == "numpy" and item is not None:
            value = item()
        parts.append(repr(value).encode())
    return parts


def seal(key: bytes, nonce: str, report: list, values, _hash=None) -> str:
    """The keyed digest of one call: its nonce, what the watch reported and the values it returned (canonical).
    The worker's hook makes it with the key the suite gave it; the suite checks it with the same key."""
    import hashlib

    h = (_hash or hashlib.blake2b)(key=key[:64], digest_size=16)
    h.update(str(nonce).encode() + b"\0" + "\0".join(str(r) for r in report).encode() + b"\0")
    for part in canonical(values, []):
        h.update(b"%d:" % len(part) + part)
    return SEAL + h.hexdigest()


def _suite_reader(w: "Watch", getframe, busy: list):
    """The hook's handler of "open" events, a closure over what it needs, bound at install: a file of the
    suite's opened by the implementation's code, other than by importing, is noted with the line that read it
    (and the code compiled from it, so that running it under another name is a banned call)."""
    import io
    import os

    suite = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
    harness, stdlib = suite + "spec_tests" + os.sep, os.path.dirname(os.__file__) + os.sep
    realpath, fspath, open_, compile_, isfile = os.path.realpath, os.fspath, io.open, compile, os.path.isfile
    environment = tuple(os.path.realpath(p) + os.sep for p in {sys.prefix, sys.base_prefix, sys.exec_prefix})

    def suite_read(args) -> None:
        frame = getframe(2)  # the code that called open() (the hook, then this function, are 0 and 1)
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return  # an import: what the bans by name and the call watch are for
        try:
            path = realpath(fspath(args[0]))
        except (TypeError, ValueError, OSError):
            return
        if not path.startswith(suite) or path.startswith(environment) or "__pycache__" in path or \
                "site-packages" in path or not isfile(path):
            return  # not the suite's own file (a virtual environment may live in the suite's folder)
        while frame is not None and (frame.f_code.co_filename.startswith((stdlib, "<frozen") + environment) or
                                     "site-packages" in frame.f_code.co_filename):
            if frame.f_code.co_filename.startswith("<frozen importlib"):
                return  # a library reading its own metadata while it is being imported
            frame = frame.f_back  # pathlib, io, a library's own reading: the code that asked them
        if frame is None or frame.f_code.co_filename.startswith(harness):
            return  # the grader's own
        where = f"{frame.f_code.co_filename.rsplit(os.sep, 1)[-1]} line {frame.f_lineno}"
        source = None
        if path.endswith(".py"):
            busy[0] = True
            try:
                with open_(path, encoding="utf-8", errors="replace") as f:
                    source = compile_(f.read(), path, "exec", dont_inherit=True)
            except (OSError, SyntaxError, ValueError):
                source = None
            finally:
                busy[0] = False
        w.read_suite(path[len(suite):], where, source)

    return suite_read


def install(names, ops, key: bytes | None = None) -> None:
    """Install the watch for banned `names` (functions, classes, modules) and `ops` (operator patterns).

    The audit hook is a closure over what it needs, bound now: the Watch, the event's name, the sealed module and
    classes, the code of watch() and sys._getframe. A call begins only from watch()'s own code and ends only from
    the frame that began it: sys.audit(EVENT, "end") from anywhere else is tampering, and the watch stays on."""
    import hashlib

    w = Watch(names, ops)
    sealed = _Seal(sys.modules[__name__], (Watch, _Names, _Seal))
    name, tamper_events, getframe = EVENT, frozenset(TAMPER_EVENTS), sys._getframe
    entries = (watch.__code__, watch_sealed.__code__)
    guarded = (watch, watch_sealed, install, seal, canonical)
    denied, make_seal, blake2b = frozenset(DENIED), seal, hashlib.blake2b
    began = [None]  # the frame of watch() that began the current call
    ended = [None]  # the frame of watch_sealed() that ended the last call, until it seals it
    busy = [False]  # the hook reading a suite file itself
    suite_read = _suite_reader(w, getframe, busy)

    interesting = frozenset((name, "open", "import", "object.__setattr__", "sys.addaudithook")) | tamper_events | \
        denied

    def hook(event, args):
        if event not in interesting:  # the common case (frame.f_code, read at every profiled call): at once
            return
        if event == name:
            command = args[0] if args else None
            caller = getframe(1)  # the frame that called sys.audit (the hook is called from C)
            for problem in sealed.broken():  # put back: during a call it fails the call, before one it is noted
                if w.in_call:
                    w.tampered(problem)
                elif problem not in w.noted:
                    w.noted.append(problem)
            if command == "begin" and not w.in_call and caller.f_code in entries:
                began[0] = caller
                w.begin()
            elif command == "end" and w.in_call and caller is began[0] and len(args) > 1 and \
                    isinstance(args[1], list):
                ended[0], began[0] = caller, None
                w.end(args[1])
            elif command == "seal" and caller is ended[0] and not w.in_call and len(args) > 3 and \
                    isinstance(args[1], list):  # watch_sealed(), once after its end: the report and values
                ended[0] = None
                out = args[1]
                if key is not None:
                    out.append(make_seal(key, args[2], [str(r) for r in out], args[3], blake2b))
            else:  # a call out of order: someone other than the worker's watch()
                w.tampered(f"sys.audit({name!r}, {command!r}) called out of order")
            return
        if event == "open":
            if not busy[0] and args and not isinstance(args[0], int):
                suite_read(args)
            return
        if event in denied:  # the garbage collector's and other threads' view would reach the hook and its key
            w.tampered(event)
            raise RuntimeError(f"{event} is not allowed while the grader runs this code")
        if event == "object.__setattr__" and args and args[0] in guarded:
            w.tampered(f"setting {args[0].__name__}.{args[1]}")
        w.event(event, args, tamper_events)

    # sys.audit looks up __cantrace__ on every hook at every event (frame.f_code, read by the profile function at
    # each call, is one): a miss raises and clears an AttributeError. False is what a miss means: the hook runs
    # with tracing and profiling paused.
    hook.__cantrace__ = False
    sys.addaudithook(hook)


def watch(audit, hits: list, fn, *args, _event=EVENT, **kwargs):
    """Run fn under the watch; what it used that is banned is added to `hits`. `audit` is sys.audit as
    the worker captured it at start-up (the worker also holds this function from before the import);
    the event's name is bound here, at definition, so that changing EVENT later does not reach it."""
    if audit is None:
        return fn(*args, **kwargs)
    audit(_event, "begin")
    try:
        return fn(*args, **kwargs)
    finally:
        audit(_event, "end", hits)


def watch_sealed(audit, hits: list, nonce: str, fn, convert=None, _event=EVENT):
    """fn() under the watch, then convert(its result) (the values that cross the wire); after both, the hook
    appends to `hits` the seal of (nonce, what it reported, values), which the suite checks (seal()). A call
    that bypassed the watch, or whose report or values were changed after it, has no valid seal. fn checks that
    its result is plain (exact numpy.ndarray or torch.Tensor types) before the call ends, so converting it runs
    no code of the implementation's."""
    audit(_event, "begin")
    done = False
    try:
        result = fn()
        done = True
    finally:
        audit(_event, "end", hits)
        if not done:
            audit(_event, "seal", hits, nonce, None)
    values = None
    try:
        values = convert(result) if convert is not None else None
        return result, values
    finally:
        audit(_event, "seal", hits, nonce, values)
