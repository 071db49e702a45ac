"""Finding and loading implementations: the only place that imports code under test.

An implementation is one Python module obeying the contract in CONTRACT.md, named by
  * a stem of a file under impls/          --impl torch_sdpa
  * a path to any .py file                  --impl ~/hw/attention.py
  * a path to a Jupyter notebook            --impl ~/hw/attention.ipynb   (harness/notebook.py)
  * an importable module name               --impl mypkg.attention
  * `all`: every module under impls/ that can run here (not the template, not mutants)
  * `adapter:NAME` (adapters/NAME.py, a library's adapter), or `adapter:all`
or a comma-separated list of these. Without --impl, the suite runs `all`.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from spec_tests.harness import packages

IMPLS_DIR = packages.location("impls")
ENV_VAR = "MHA_SPEC_IMPL"
NOT_IN_ALL = {"template"}  # the learner's starting point raises NotImplementedError everywhere

CONTRACT_FUNCTIONS = (
    "scaled_dot_product_attention",
    "attention_weights",
    "split_heads",
    "merge_heads",
    "multi_head_attention",
    "layer_norm",
    "sinusoidal_positional_encoding",
)
# The later chapters' functions (README, "Later chapters"): optional. Without one, its claims are
# "not implemented" and the run is not red on their account.
LATER_FUNCTIONS = (
    "rotary_embedding",
    "t5_relative_position_bucket",
    "layer_norm_backward",
    "scaled_dot_product_attention_backward",
    "merge_attention",  # docs/log_sum_exp.md
)
ALL_FUNCTIONS = CONTRACT_FUNCTIONS + LATER_FUNCTIONS
# Keywords that later chapters add to v1 functions: optional, as those chapters are.
LATER_KEYWORDS = ("bias", "num_kv_heads",
                  "window_size", "q_segment_ids", "kv_segment_ids",  # mask algebra (docs/mask_algebra.md)
                  "softcap", "sinks",  # softcapping and sinks (docs/softcap_sinks.md)
                  "return_lse",  # the log-sum-exp (docs/log_sum_exp.md)
                  "dropout_p", "generator", "training")  # dropout (docs/dropout.md)
# Keywords of a tiled (chunked) implementation only: without them EFF-1/EFF-2 do not apply.
TILING_KEYWORDS = ("block_q", "block_k")
KNOWN_DTYPES = ("float64", "float32", "float16", "bfloat16")


@dataclass
class Implementation:
    """One implementation module and what it declares (BACKEND, DEVICE, DTYPES)."""

    name: str
    spec: str  # what the user wrote to select it
    module: ModuleType | None = None
    backend: str = "numpy"
    device: str = "cpu"
    dtypes: tuple[str, ...] = ("float64", "float32")
    unavailable: str | None = None  # reason it cannot run on this machine
    path: str | None = None
    notes: list[str] = field(default_factory=list)
    remote: object | None = None  # under --isolate: the worker session (isolation.py) that runs the module
    # CONTRACT: the contract functions the module implements, when it declares only a part of the
    # contract (a kernel providing scaled_dot_product_attention alone); None: the whole v1 contract.
    contract: tuple[str, ...] | None = None
    flash: bool = False  # FLASH_KERNEL = True: a tiled kernel that never forms L_q x L_k (EFF-3 applies)

    def in_scope(self, fname: str) -> bool:
        return self.contract is None or fname not in ALL_FUNCTIONS or fname in self.contract

    def requires(self, fname: str) -> bool:
        """Whether a missing `fname` makes the run red: the v1 functions, or those of a declared CONTRACT."""
        if self.contract is not None:
            return fname in self.contract
        return fname in CONTRACT_FUNCTIONS

    def has(self, fname: str) -> bool:
        return self.module is not None and callable(getattr(self.module, fname, None))


def adapter_names() -> list[str]:
    """The library adapters shipped in adapters/ (adapters/__init__.py)."""
    return sorted(p.stem for p in packages.location("adapters").glob("*.py") if not p.stem.startswith("_"))


def builtin_names(include_template: bool = False) -> list[str]:
    names = sorted(p.stem for p in IMPLS_DIR.glob("*.py") if not p.stem.startswith("_"))
    return [n for n in names if include_template or n not in NOT_IN_ALL]


def _import_path(path: Path) -> ModuleType:
    name = "_spec_impl_" + "".join(c if c.isalnum() else "_" for c in str(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


_NOTEBOOK_NOTES: dict[str, list[str]] = {}  # a notebook module's name -> the notes of its loading


def _import_notebook(path: Path) -> ModuleType:
    from spec_tests.harness import notebook

    module, notes = notebook.load(path, ALL_FUNCTIONS)
    _NOTEBOOK_NOTES[module.__name__] = notes
    return module


def load_module(spec: str) -> tuple[str, ModuleType, str | None]:
    """Import what `spec` names; return (display name, module, file path)."""
    expanded = os.path.expanduser(spec)
    if expanded.endswith((".py", ".ipynb")) or os.sep in expanded:
        path = Path(expanded).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"--impl {spec}: no such file {path}")
        if path.suffix == ".ipynb":  # a Jupyter notebook: its code cells, run in order (harness/notebook.py)
            return path.stem, _import_notebook(path), str(path)
        return path.stem, _import_path(path), str(path)
    if (IMPLS_DIR / f"{spec}.py").is_file():
        module = importlib.import_module(f"impls.{spec}")
        return spec, module, module.__file__
    module = importlib.import_module(spec)
    return spec.rsplit(".", 1)[-1], module, getattr(module, "__file__", None)


def _declared(module: ModuleType) -> tuple[str, str, tuple[str, ...], list[str]]:
    notes = []
    backend = getattr(module, "BACKEND", None)
    if backend not in ("numpy", "torch"):
        raise ValueError(f'BACKEND must be "numpy" or "torch", got {backend!r}')
    device = getattr(module, "DEVICE", "cpu")
    if device not in ("cpu", "cuda"):
        raise ValueError(f'DEVICE must be "cpu" or "cuda", got {device!r}')
    dtypes = tuple(getattr(module, "DTYPES", ("float64", "float32")))
    unknown = [d for d in dtypes if d not in KNOWN_DTYPES]
    if unknown:
        raise ValueError(f"DTYPES lists unknown dtype names {unknown}; known: {KNOWN_DTYPES}")
    if backend == "numpy" and "bfloat16" in dtypes:
        raise ValueError("NumPy has no bfloat16; remove it from DTYPES")
    return backend, device, dtypes, notes


def declared_contract(module: ModuleType) -> tuple[str, ...] | None:
    """The module's CONTRACT: the contract functions it implements (None when it does not declare one).

        CONTRACT = ("scaled_dot_product_attention",)      # a kernel: the other functions do not apply
    """
    value = getattr(module, "CONTRACT", None)
    if value is None:
        return None
    names = (value,) if isinstance(value, str) else tuple(value)
    unknown = [n for n in names if n not in ALL_FUNCTIONS]
    if unknown or not names:
        raise ValueError(f"CONTRACT must list contract functions; unknown: {unknown}; known: {ALL_FUNCTIONS}")
    return names


def declared_flash(module: ModuleType) -> bool:
    value = getattr(module, "FLASH_KERNEL", False)
    if not isinstance(value, bool):
        raise ValueError(f"FLASH_KERNEL must be True or False, got {value!r}")
    return value


def _device_missing(backend: str, device: str) -> str | None:
    if backend != "torch" or device == "cpu":
        return None
    import torch

    if not torch.cuda.is_available():
        return "needs a CUDA GPU (DEVICE = 'cuda'), and torch sees none on this machine"
    return None


def load(spec: str) -> Implementation:
    """Load one implementation; an import failure of a built-in makes it unavailable, with the reason."""
    builtin = (IMPLS_DIR / f"{spec}.py").is_file() or spec.startswith("adapters.")  # an adapter's library may be missing
    try:
        name, module, path = load_module(spec)
    except ModuleNotFoundError as exc:
        if builtin:  # a built-in needing a package this machine lacks (torch, triton, flash_attn)
            return Implementation(name=spec, spec=spec, unavailable=f"cannot import: {exc}")
        raise
    backend, device, dtypes, notes = _declared(module)
    try:
        missing = _device_missing(backend, device)
    except ModuleNotFoundError as exc:
        missing = f"cannot import: {exc}"
    notes += _NOTEBOOK_NOTES.get(module.__name__, [])  # a notebook's: what was skipped, where functions are
    impl = Implementation(name=name, spec=spec, module=module, backend=backend, device=device,
                          dtypes=dtypes, unavailable=missing, path=path, notes=notes,
                          contract=declared_contract(module), flash=declared_flash(module))
    extra = getattr(module, "UNAVAILABLE", None)  # a module may declare why it cannot run here
    if extra and not impl.unavailable:
        impl.unavailable = str(extra)
    return impl


def expand(specs: list[str]) -> list[str]:
    out: list[str] = []
    for item in specs:
        for part in (p.strip() for p in item.split(",")):
            if not part:
                continue
            if part.startswith("adapter:"):  # adapter:NAME is adapters/NAME.py; adapter:all every adapter
                part = part.removeprefix("adapter:")
                out.extend(f"adapters.{n}" for n in (adapter_names() if part == "all" else [part]))
                continue
            out.extend(builtin_names() if part == "all" else [part])
    seen, unique = set(), []
    for s in out:
        if s not in seen:
            seen.add(s)
            unique.append(s)
    return unique


def selected_specs(option_values: list[str] | None) -> tuple[list[str], bool]:
    """The implementations to run, and whether the user chose them explicitly."""
    values = list(option_values or [])
    if not values and os.environ.get(ENV_VAR):
        values = [os.environ[ENV_VAR]]
    if not values:
        return builtin_names(), False
    return expand(values), True


def load_impl(spec: str) -> ModuleType:
    """The raw module an --impl spec names (used in reproduction snippets)."""
    return load_module(spec)[1]
