"""The runtime contract: a sandbox a session's commands run in, and the result of one command."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

import msgspec

from polar_hpc.errors import PolarError

SANDBOX_SESSION_DIR = "/polar/session"
"""Where the host session dir appears inside every sandbox (local: the host path itself)."""
SANDBOX_PROXY_SOCKET = "/polar/proxy.sock"
"""Where the proxy's Unix socket is bound inside a sandbox whose network is unshared."""
SANDBOX_FORWARDER = "/polar/runtime/uds_forward.py"
FORWARD_PORT = 28080
"""Loopback port of the in-sandbox TCP→UDS forwarder (the sandbox has its own net ns, so it never clashes)."""


class ExecResult(msgspec.Struct, frozen=True, kw_only=True):
    returncode: int
    """Exit status; negative when killed by a signal (``-15`` after a timeout's SIGTERM)."""
    stdout: str
    stderr: str
    timed_out: bool = False
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


class SandboxError(PolarError):
    """Base of every runtime error."""

    exit_code = 1


class SandboxUnavailable(SandboxError):
    """The backend's binary or kernel feature is missing on this machine."""


class SandboxStartError(SandboxError):
    """``start()`` failed; the message carries the backend's stderr."""


class SandboxStateError(SandboxError):
    """A call in the wrong state, e.g. ``exec`` before ``start`` or after ``stop``."""


class PrepareError(SandboxError):
    """A prepare action kept failing after its retries."""

    def __init__(self, message: str, result: ExecResult | None = None) -> None:
        super().__init__(message)
        self.result = result


@runtime_checkable
class Runtime(Protocol):
    """One session's sandbox. ``stop`` is idempotent and leaves nothing of the session running or mounted."""

    session_dir: Path
    """Host path of the session dir (writable, survives ``stop``; the gateway deletes it)."""
    sandbox_session_dir: str
    """The same dir as seen by commands in the sandbox (``/polar/session`` except for ``local``)."""
    is_root: bool
    """Whether commands run as uid 0 inside the sandbox (harness quirks depend on it)."""

    async def start(self) -> None: ...

    async def exec(
        self,
        cmd: str | list[str],
        *,
        timeout_s: float | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        log_path: Path | None = None,
    ) -> ExecResult: ...

    async def upload(self, src: Path, dst: str) -> None: ...

    async def download(self, src: str, dst: Path) -> None: ...

    def proxy_base_url(self, host_base_url: str) -> str:
        """The proxy's base URL as commands in the sandbox must use it."""
        ...

    async def stop(self) -> None: ...
