"""Sandboxes a session's commands run in: ``bwrap``, ``apptainer``, ``docker``, ``podman`` and ``local`` behind one
interface. ``config.run.RUNTIME_BACKENDS`` is the one table of them: each entry names its module's ``Backend``
(``runtime/backend.py``), which owns every fact of it (runtime class, binary, doctor lines, images, crash cleanup)."""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path

from polar_hpc.config.base import ConfigError
from polar_hpc.config.run import RUNTIME_BACKENDS, RuntimeSpec
from polar_hpc.runtime.backend import Backend
from polar_hpc.runtime.base import (
    ExecResult,
    PrepareError,
    Runtime,
    SandboxError,
    SandboxStartError,
    SandboxStateError,
    SandboxUnavailable,
)
from polar_hpc.runtime.handoff import ServeListener

__all__ = [
    "BACKENDS",
    "Backend",
    "ExecResult",
    "PrepareError",
    "Runtime",
    "SandboxError",
    "SandboxStartError",
    "SandboxStateError",
    "SandboxUnavailable",
    "all_backends",
    "backend",
    "make_runtime",
]

BACKENDS: tuple[str, ...] = tuple(sorted(RUNTIME_BACKENDS))


@cache
def backend(name: str) -> Backend:
    """The ``Backend`` of ``runtime.backend = name``; ``ConfigError`` (a ValueError) naming the known ones."""
    if name not in RUNTIME_BACKENDS:
        raise ConfigError(f"runtime.backend: expected one of {', '.join(BACKENDS)}, got {name!r}")
    module, _, attr = RUNTIME_BACKENDS[name].partition(":")
    found: Backend = getattr(importlib.import_module(module), attr)
    return found


def all_backends() -> list[Backend]:
    return [backend(name) for name in RUNTIME_BACKENDS]


def make_runtime(spec: RuntimeSpec, session_dir: Path, *, proxy_socket: Path | None = None,
                 serve_listener: ServeListener | None = None) -> Runtime:
    """A not-yet-started runtime for one session; call ``await rt.start()`` then ``exec``, ``stop``.

    ``serve_listener``: the rank's proxy serving a sandbox's handed-off listener (``runtime.bridge = "handoff"``,
    bwrap); the other backends reach ``proxy_socket`` through a forwarder."""
    return backend(spec.backend).make(spec, session_dir, proxy_socket=proxy_socket, serve_listener=serve_listener)
