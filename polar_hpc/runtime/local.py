"""``local``: plain subprocesses on the host, in the session dir. No isolation at all."""

from __future__ import annotations

import os
from pathlib import Path

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.log import get_logger
from polar_hpc.runtime.backend import Backend
from polar_hpc.runtime.base import SANDBOX_SESSION_DIR, Runtime
from polar_hpc.runtime.common import SandboxBase
from polar_hpc.runtime.handoff import ServeListener

log = get_logger("runtime")
_warned = False


class LocalRuntime(SandboxBase):
    """Commands see the host's whole filesystem and network; ``/polar/session`` paths are mapped to the host dir."""

    backend = "local"

    def __init__(self, spec: RuntimeSpec, session_dir: Path, *, proxy_socket: Path | None = None) -> None:
        super().__init__(spec, session_dir, proxy_socket=None)
        self.sandbox_session_dir = str(self.session_dir)
        self.is_root = os.geteuid() == 0
        global _warned
        if not _warned:
            _warned = True
            log.warning(
                "runtime backend 'local': harness commands run UNSANDBOXED on this host with your user's "
                "rights (files, network, processes); use backend 'bwrap' or 'apptainer' for real runs"
            )
        if spec.network == "none":
            log.warning("runtime backend 'local' cannot unshare the network; network='none' is ignored")
        if spec.image:
            log.warning("runtime backend 'local' ignores image=%r", spec.image)

    @property
    def bridged(self) -> bool:
        return False

    def _map(self, path: str) -> str:
        if path == SANDBOX_SESSION_DIR or path.startswith(SANDBOX_SESSION_DIR + "/"):
            return self.sandbox_session_dir + path[len(SANDBOX_SESSION_DIR) :]
        return path

    def base_env(self) -> dict[str, str]:
        return {**os.environ, **super().base_env(), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}

    def resolve_cwd(self, cwd: str | None) -> str:
        return self._map(super().resolve_cwd(cwd))

    def host_path(self, sandbox_path: str) -> Path | None:
        return Path(self._map(sandbox_path))

    def _wrap(self, argv: list[str], env: dict[str, str], cwd: str, *,
              handoff_fd: int | None = None) -> tuple[list[str], dict[str, str], Path | None]:
        Path(cwd).mkdir(parents=True, exist_ok=True)
        env = {k: self._map(v) if k in ("HOME", "SESSION_DIR") else v for k, v in env.items()}
        return argv, env, Path(cwd)


class LocalBackend(Backend):
    name = "local"

    def make(self, spec: RuntimeSpec, session_dir: Path, *, proxy_socket: Path | None = None,
             serve_listener: ServeListener | None = None) -> Runtime:
        return LocalRuntime(spec, session_dir, proxy_socket=proxy_socket)

    def forwarder(self, rt: RuntimeSpec) -> bool:
        return False


BACKEND = LocalBackend()
