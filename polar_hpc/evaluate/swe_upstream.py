"""The ``swebench`` package's own harness pieces (specs, eval script, log parsers, grading), without its stack.

swebench 4.1.0 is the last release whose ``swebench.harness.constants`` holds ``MAP_REPO_VERSION_TO_SPECS`` (5.x
moved the specs into per-task repositories). Its package ``__init__`` files import the Docker and Modal harness
(docker, modal, ghapi, GitPython, ...); the modules we use need only ``unidiff``, ``requests``, ``python-dotenv``
and ``datasets``. So it is installed with ``pip install --no-deps swebench==4.1.0 unidiff python-dotenv`` (the
``swe`` extra of polar-hpc; tools/setup.sh does it), and loaded here with placeholder ``swebench`` and
``swebench.harness`` package modules that give the submodules their search path without running those
``__init__`` files.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from polar_hpc.errors import PolarError

SWEBENCH_VERSION = "4.1.0"
INSTALL_HINT = f"pip install --no-deps swebench=={SWEBENCH_VERSION} unidiff python-dotenv"


class UpstreamUnavailable(PolarError, RuntimeError):
    """The ``swebench`` package (4.x) is not installed or not importable."""


@dataclass(frozen=True)
class Upstream:
    """The swebench modules polar-hpc uses (held as modules: swebench has no typed API)."""

    version: str
    constants: types.ModuleType
    log_parsers: types.ModuleType
    grading: types.ModuleType
    test_spec_python: types.ModuleType
    test_spec_cls: type
    native_repos: frozenset[str]
    """Repositories swebench itself has specs and parsers for (others are registered per grading)."""

    def specs(self, repo: str, version: str) -> dict[str, Any] | None:
        spec: dict[str, Any] | None = self.constants.MAP_REPO_VERSION_TO_SPECS.get(repo, {}).get(version)
        return spec

    def parser(self, name: str) -> Callable[[str, Any], dict[str, str]]:
        fn = getattr(self.log_parsers, name, None)
        if fn is None:
            for sub in ("python", "javascript", "java", "go", "rust", "c", "php", "ruby"):
                fn = getattr(importlib.import_module(f"swebench.harness.log_parsers.{sub}"), name, None)
                if fn is not None:
                    break
        if not callable(fn):
            raise KeyError(f"swebench {self.version} has no log parser {name!r}")
        return fn  # type: ignore[no-any-return]  # swebench is untyped; callable checked above

    def parser_name(self, repo: str) -> str | None:
        fn = self.log_parsers.MAP_REPO_TO_PARSER.get(repo)
        return None if fn is None else str(fn.__name__)


def _placeholder(name: str, path: str) -> None:
    if name not in sys.modules:
        mod = types.ModuleType(name)
        mod.__path__ = [path]
        mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        mod.__spec__.submodule_search_locations = [path]
        mod.__polar_placeholder__ = True  # type: ignore[attr-defined]  # our marker on a bare module
        sys.modules[name] = mod


_LOCK = threading.Lock()


def load() -> Upstream:
    """The swebench harness modules; raises :class:`UpstreamUnavailable` naming what to install. Thread-safe
    (gradings run in worker threads, and the first import takes seconds)."""
    with _LOCK:
        return _load()


@cache
def _load() -> Upstream:
    found = importlib.util.find_spec("swebench")
    if found is None or not found.submodule_search_locations:
        raise UpstreamUnavailable(f"the swebench package is not installed ({INSTALL_HINT})")
    root = list(found.submodule_search_locations)[0]
    _placeholder("swebench", root)
    _placeholder("swebench.harness", f"{root}/harness")
    try:
        constants = importlib.import_module("swebench.harness.constants")
        log_parsers = importlib.import_module("swebench.harness.log_parsers")
        grading = importlib.import_module("swebench.harness.grading")
        test_spec_python = importlib.import_module("swebench.harness.test_spec.python")
        test_spec = importlib.import_module("swebench.harness.test_spec.test_spec")
    except ImportError as err:
        raise UpstreamUnavailable(f"swebench's harness modules do not import ({err}); {INSTALL_HINT}") from err
    if not hasattr(constants, "MAP_REPO_VERSION_TO_SPECS"):
        raise UpstreamUnavailable(f"this swebench has no MAP_REPO_VERSION_TO_SPECS (5.x keeps specs in task "
                                  f"repositories); {INSTALL_HINT}")
    try:
        from importlib.metadata import version

        installed = version("swebench")
    except Exception:
        installed = "unknown"
    native = frozenset(constants.MAP_REPO_VERSION_TO_SPECS) & frozenset(log_parsers.MAP_REPO_TO_PARSER)
    return Upstream(version=installed, constants=constants, log_parsers=log_parsers, grading=grading,
                    test_spec_python=test_spec_python, test_spec_cls=test_spec.TestSpec, native_repos=native)


def available() -> bool:
    try:
        load()
    except UpstreamUnavailable:
        return False
    return True
