"""`pytest --impl ~/hw/attention.py`, run from the repository, is the same run as `--impl numpy_fast`.

pytest chooses its rootdir and configuration file before it loads the suite's plugin, so it does not yet
know that --impl takes a value: it reads the implementation's path as a test path, roots the run in
that file's folder and finds no configuration (no markers, no `-m "not slow"`, the whole working
directory collected, test ids relative to a foreign folder). `redetermine`, called from the plugin's
pytest_load_initial_conftests once --impl is known, repeats the search on the real test paths. Without
any, from a folder that is not the project, the run uses the project's configuration and collects
spec_tests/, so that it is the same from anywhere. A run whose test paths all lie in the suite
(`pytest --pyargs spec_tests`, a path into an installed spec_tests/) and find no configuration file
uses the project's configuration too, with or without --impl.

The project's configuration is pyproject.toml's [tool.pytest.ini_options] in the repository, and
spec_tests/pytest_config.toml, the same values shipped as package data, where the package is
installed and no pyproject.toml lies beside it (`config_file`).

No public pytest API does this. pytest decides the rootdir and the configuration file in Config.parse,
before any hook sees the arguments, stores them in private attributes (`rootpath` and `inipath` are
read-only properties over them) and offers neither a hook nor a setter to choose them again. So this
module alone uses pytest's internals: its search (`_pytest.config.findpaths.determine_setup`) and the
attributes Config.parse sets from it.
"""

from __future__ import annotations

import copy
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository (or installed project) holding spec_tests/
PROJECT_INI = ROOT / "pyproject.toml"
SPEC_DIR = ROOT / "spec_tests"
PACKAGED_INI = SPEC_DIR / "pytest_config.toml"  # installed: the same values as pyproject.toml's


def config_file() -> Path:
    """The project's pytest configuration: the repository's pyproject.toml, else the packaged copy."""
    return PROJECT_INI if PROJECT_INI.is_file() else PACKAGED_INI


def _inside_suite(paths: list[str], pyargs: bool, invocation_dir: Path) -> bool:
    """Whether every test path names the suite's folder or something in it."""
    if not paths:
        return False
    for arg in paths:
        target = arg.split("::", 1)[0]
        if pyargs and (target == SPEC_DIR.name or target.startswith(SPEC_DIR.name + ".")):
            continue
        path = (invocation_dir / Path(target).expanduser()).resolve()
        if path != SPEC_DIR and SPEC_DIR not in path.parents:
            return False
    return True


def determine_setup(config, known):
    """pytest's own rootdir/inifile search, on the arguments as they parse once --impl is known."""
    from _pytest.config import findpaths  # private: pytest's rootdir search has no public entry point

    wanted = dict(inifile=known.inifilename, override_ini=getattr(known, "override_ini", None),
                  args=list(getattr(known, "file_or_dir", []) or []), rootdir_cmd_arg=known.rootdir or None,
                  invocation_dir=config.invocation_params.dir)
    accepted = inspect.signature(findpaths.determine_setup).parameters  # they change between pytest versions
    found = findpaths.determine_setup(**{k: v for k, v in wanted.items() if k in accepted})
    return found[0], found[1], found[2]


def adopt(config, parser, args, rootpath, inipath, inicfg) -> None:
    """Make `config` what pytest would have built with this rootdir and configuration file (what
    Config.parse does with determine_setup's answer; no public setter exists for any of it)."""
    had_ini = config.inipath is not None
    config._rootpath, config._inipath = rootpath, inipath  # private: Config.rootpath/.inipath are read-only
    if hasattr(config, "_inicfg"):
        config._inicfg = inicfg  # private: the configuration file's values, read by config.getini
    else:  # pytest 8: the same, under a name without the underscore (deprecated in pytest 9)
        config.inicfg = inicfg
    config._inicache.clear()  # private: getini's cache of values read from the configuration pytest first found
    parser.extra_info["rootdir"] = str(rootpath)
    parser.extra_info["inifile"] = str(inipath)
    if not had_ini and inipath is not None:  # pytest applied no configured addopts: apply the project's
        # private: as Config.parse does, so that a bad option in addopts is reported "via addopts config"
        args[:] = [*config._validate_args(config.getini("addopts"), "via addopts config"), *args]
    namespace = parser.parse_known_args(args, namespace=copy.copy(config.option))
    if namespace.confcutdir is None:
        namespace.confcutdir = str(inipath.parent if inipath is not None else rootpath)
    config.known_args_namespace = namespace


def redetermine(early_config, parser, args) -> None:
    """The rootdir and configuration file of a run with --impl, chosen on its real test paths."""
    known = parser.parse_known_args(args, namespace=copy.copy(early_config.option))
    with_impl = bool(getattr(known, "impl", None))
    paths = list(getattr(known, "file_or_dir", []) or [])
    if not with_impl and not paths:
        return
    try:
        rootpath, inipath, inicfg = determine_setup(early_config, known)
    except pytest.UsageError:
        return  # pytest reports a bad --rootdir or -c itself
    project = config_file()
    no_paths = with_impl and not paths and inipath != project
    in_suite = inipath is None and _inside_suite(paths, bool(getattr(known, "pyargs", False)),
                                                 early_config.invocation_params.dir)
    if (no_paths or in_suite) and project.is_file():
        known.inifilename, known.rootdir = str(project), str(ROOT)
        if project == PACKAGED_INI and "no:cacheprovider" not in (getattr(known, "plugins", None) or []):
            # installed: pytest's cache (--lf) in the folder the run started from, not in site-packages
            cache = early_config.invocation_params.dir / ".pytest_cache"
            known.override_ini = [f"cache_dir={cache}", *(getattr(known, "override_ini", None) or [])]  # theirs win
        rootpath, inipath, inicfg = determine_setup(early_config, known)
        if no_paths:
            args.append(str(SPEC_DIR))
    if (rootpath, inipath) != (early_config.rootpath, early_config.inipath):
        adopt(early_config, parser, args, rootpath, inipath, inicfg)
