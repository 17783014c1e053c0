"""Sandboxes a session's commands run in: ``bwrap``, ``apptainer``, ``docker``, ``podman`` and ``local`` behind one
interface."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from polar_hpc.config.run import RuntimeBackend, RuntimeSpec
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
    "ExecResult",
    "PrepareError",
    "Runtime",
    "SandboxError",
    "SandboxStartError",
    "SandboxStateError",
    "SandboxUnavailable",
    "make_runtime",
]

BACKENDS: tuple[RuntimeBackend, ...] = get_args(RuntimeBackend)


def make_runtime(spec: RuntimeSpec, session_dir: Path, *, proxy_socket: Path | None = None,
                 serve_listener: ServeListener | None = None) -> Runtime:
    """A not-yet-started runtime for one session; call ``await rt.start()`` then ``exec``, ``stop``.

    ``serve_listener``: the rank's proxy serving a sandbox's handed-off listener (``runtime.bridge = "handoff"``,
    bwrap); the other backends reach ``proxy_socket`` through a forwarder."""
    if spec.backend == "local":
        from polar_hpc.runtime.local import LocalRuntime

        return LocalRuntime(spec, session_dir, proxy_socket=proxy_socket)
    if spec.backend == "bwrap":
        from polar_hpc.runtime.bwrap import BwrapRuntime

        return BwrapRuntime(spec, session_dir, proxy_socket=proxy_socket, serve_listener=serve_listener)
    if spec.backend == "apptainer":
        from polar_hpc.runtime.apptainer import ApptainerRuntime

        return ApptainerRuntime(spec, session_dir, proxy_socket=proxy_socket)
    if spec.backend in ("docker", "podman"):
        from polar_hpc.runtime.container import ContainerRuntime

        return ContainerRuntime(spec, session_dir, proxy_socket=proxy_socket)
    raise ValueError(f"runtime.backend: expected one of {', '.join(BACKENDS)}, got {spec.backend!r}")
