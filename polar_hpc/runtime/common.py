"""What every backend shares: state, env, path mapping, transfers, and the live-process bookkeeping."""

from __future__ import annotations

import asyncio
import shlex
import shutil
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.log import get_logger
from polar_hpc.runtime.base import (
    FORWARD_PORT,
    SANDBOX_SESSION_DIR,
    ExecResult,
    SandboxError,
    SandboxStateError,
)
from polar_hpc.runtime.handoff import Handoff, ServeListener
from polar_hpc.runtime.process import DRAIN_S, KILL_GRACE_S, kill_tree, run_command
from polar_hpc.wire.rundir import SessionDir

log = get_logger("runtime")

SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def copy_path(src: Path, dst: Path) -> None:
    """Copy a file or a directory tree (``dst`` is the new name, parents created)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
    elif src.exists():
        shutil.copy2(src, dst)
    else:
        raise FileNotFoundError(f"copy: source {src} does not exist")


SANDBOX_POLAR_ROOT = "/opt/polar-hpc"
"""``host_python``: the polar_hpc package is bound at ``<this>/polar_hpc`` and this is the sandbox's PYTHONPATH."""


def host_python_binds() -> list[tuple[str, str]]:
    """``host_python`` read-only binds (host path, sandbox path): the interpreter prefixes outside the system
    dirs, and the polar_hpc package folder itself at a fixed path, never the folder around it (with an editable
    install that is the whole checkout, which may hold other runs' folders and their secrets)."""
    import polar_hpc

    prefixes = {sys.prefix, sys.base_prefix}
    binds = [(p, p) for p in sorted(prefixes) if not p.startswith(("/usr", "/bin", "/lib", "/etc"))]
    package = Path(polar_hpc.__file__).resolve().parent
    return [*binds, (str(package), f"{SANDBOX_POLAR_ROOT}/polar_hpc")]


class SandboxBase:
    """A sandbox whose session dir is a host dir bound at ``sandbox_session_dir``.

    Subclasses build the argv of one command (``_wrap``) and may add ``_start`` / ``_stop`` steps.
    """

    backend = "base"
    exec_transfers = True
    """Whether paths off the host-backed mounts can be reached by copying through an ``exec``."""

    handoff_capable = False
    """Whether the backend can hand a sandbox's listening socket to the rank (``runtime.bridge = "handoff"``)."""

    def __init__(self, spec: RuntimeSpec, session_dir: Path, *, proxy_socket: Path | None = None,
                 serve_listener: ServeListener | None = None) -> None:
        self.spec = spec
        self.session_dir = Path(session_dir).resolve()
        self.sandbox_session_dir = SANDBOX_SESSION_DIR
        self.proxy_socket = proxy_socket
        self.serve_listener = serve_listener if self.handoff_capable else None
        self.is_root = False
        self._live: set[int] = set()
        self._inflight: set[asyncio.Future[ExecResult]] = set()
        self._state = "new"
        self._scratch: Path | None = None

    @property
    def scratch(self) -> Path:
        """Host temp dir of this session (private /tmp etc.), removed by ``stop``."""
        if self._scratch is None:
            raise SandboxStateError(f"{self.backend} runtime for {self.session_dir}: not started")
        return self._scratch

    @property
    def handoff(self) -> bool:
        """True when the network is unshared and each command's listening socket is served by the rank's proxy."""
        return self.spec.network == "none" and self.spec.bridge == "handoff" and self.serve_listener is not None

    @property
    def bridged(self) -> bool:
        """True when the network is unshared and the proxy is reached through the sandbox bridge (a forwarder to
        the bound socket, or the hand-off)."""
        return self.spec.network == "none" and (self.proxy_socket is not None or self.handoff)

    def proxy_base_url(self, host_base_url: str) -> str:
        return f"http://127.0.0.1:{FORWARD_PORT}" if self.bridged else host_base_url

    # ---- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        if self._state != "new":
            raise SandboxStateError(f"{self.backend} runtime for {self.session_dir}: start() when {self._state}")
        if self.spec.network == "none" and self.proxy_socket is None and not self.handoff:
            log.warning("%s: network='none' without a proxy socket: the harness cannot reach the proxy", self.backend)
        if self.proxy_socket is not None and not self.proxy_socket.exists():
            raise SandboxError(f"proxy socket {self.proxy_socket} does not exist (start the proxy with unix_path=...)")
        self.session_dir.mkdir(parents=True, exist_ok=True)
        layout = SessionDir(self.session_dir)
        for sub in (layout.home, layout.logs, layout.work):
            sub.mkdir(exist_ok=True)
        self._scratch = Path(tempfile.mkdtemp(prefix=f"polar-{self.backend}-"))
        (self._scratch / "tmp").mkdir()
        self._state = "starting"
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise
        self._state = "running"

    async def _start(self) -> None:
        return None

    async def stop(self) -> None:
        if self._state == "stopped":
            return
        self._state = "stopping"
        try:
            inflight = list(self._inflight)
            for task in inflight:
                task.cancel()  # run_command kills the command's tree on cancellation
            if inflight:
                await asyncio.wait(inflight, timeout=KILL_GRACE_S + DRAIN_S + 5.0)
            await asyncio.gather(*(kill_tree(pid) for pid in list(self._live)))
            self._live.clear()
            await self._stop()
        finally:
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
            self._state = "stopped"

    async def _stop(self) -> None:
        return None

    # ---- exec --------------------------------------------------------------------------------
    def base_env(self) -> dict[str, str]:
        home = f"{self.sandbox_session_dir}/home"
        path = SANDBOX_PATH
        extra: dict[str, str] = {}
        if self.spec.host_python and self.spec.backend == "bwrap":
            path = f"{sys.prefix}/bin:{path}"
            extra["PYTHONPATH"] = SANDBOX_POLAR_ROOT
        return {
            **extra,
            "PATH": path,
            "HOME": home,
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "TMPDIR": "/tmp",
            "SESSION_DIR": self.sandbox_session_dir,
        }

    def resolve_cwd(self, cwd: str | None) -> str:
        return cwd or self.spec.workdir

    def _wrap(self, argv: list[str], env: dict[str, str], cwd: str, *,
              handoff_fd: int | None = None) -> tuple[list[str], dict[str, str], Path | None]:
        """(host argv, host env, host cwd) that run ``argv`` inside the sandbox (``handoff_fd``: the number of the
        socket pair's end the command inherits, for a backend with ``handoff_capable``)."""
        raise NotImplementedError

    async def exec(
        self,
        cmd: str | list[str],
        *,
        timeout_s: float | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        log_path: Path | None = None,
    ) -> ExecResult:
        if self._state != "running":
            raise SandboxStateError(f"{self.backend} runtime for {self.session_dir}: exec() when {self._state}")
        argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        if not argv:
            raise ValueError("exec: empty command")
        full_env = {**self.base_env(), **self.spec.env, **(env or {})}
        handoff = Handoff() if self.handoff else None
        host_argv, host_env, host_cwd = self._wrap(argv, full_env, self.resolve_cwd(cwd),
                                                   handoff_fd=handoff.fd if handoff is not None else None)
        t0 = time.monotonic()
        task = asyncio.ensure_future(
            run_command(host_argv, env=host_env, cwd=host_cwd, timeout_s=timeout_s, log_path=log_path, live=self._live,
                        pass_fds=(handoff.fd,) if handoff is not None else ())
        )
        self._inflight.add(task)
        bridge = None
        if handoff is not None and self.serve_listener is not None:
            bridge = asyncio.create_task(handoff.serve(self.serve_listener))
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            return ExecResult(returncode=-signal.SIGKILL, stdout="", stderr=f"{self.backend} runtime stopped during "
                              "this command", duration_s=time.monotonic() - t0)
        finally:
            self._inflight.discard(task)
            if bridge is not None:
                bridge.cancel()
                await asyncio.gather(bridge, return_exceptions=True)
            if handoff is not None:
                handoff.close()

    # ---- transfers ---------------------------------------------------------------------------
    def host_path(self, sandbox_path: str) -> Path | None:
        """The host path behind a sandbox path when it lies on a host-backed mount, else None."""
        p = sandbox_path.rstrip("/") or "/"
        root = self.sandbox_session_dir
        if p == root or p.startswith(root + "/"):
            return self.session_dir / p[len(root) :].lstrip("/")
        if self._scratch is not None and (p == "/tmp" or p.startswith("/tmp/")):
            return self._scratch / "tmp" / p[len("/tmp") :].lstrip("/")
        return None

    def _check_transfer(self, path: str) -> None:
        if not self.exec_transfers:
            raise SandboxError(
                f"{self.backend}: {path!r} does not persist between commands in this sandbox; expected a path "
                f"under {self.sandbox_session_dir}/ or /tmp/"
            )

    async def upload(self, src: Path, dst: str) -> None:
        target = self.host_path(dst)
        if target is not None:
            await asyncio.to_thread(copy_path, Path(src), target)
            return
        self._check_transfer(dst)
        staged = f".polar-xfer-{uuid.uuid4().hex[:12]}"
        await asyncio.to_thread(copy_path, Path(src), self.session_dir / staged)
        try:
            inside = f"{self.sandbox_session_dir}/{staged}"
            q = shlex.quote
            parent = q(str(Path(dst).parent))
            res = await self.exec(f"mkdir -p {parent} && cp -a {q(inside)} {q(dst)}", timeout_s=300)
            if not res.ok:
                raise SandboxError(f"upload {src} -> {dst}: exit {res.returncode}: {res.stderr.strip()}")
        finally:
            await asyncio.to_thread(_remove, self.session_dir / staged)

    async def download(self, src: str, dst: Path) -> None:
        source = self.host_path(src)
        if source is not None:
            await asyncio.to_thread(copy_path, source, Path(dst))
            return
        self._check_transfer(src)
        staged = f".polar-xfer-{uuid.uuid4().hex[:12]}"
        inside = f"{self.sandbox_session_dir}/{staged}"
        try:
            res = await self.exec(f"cp -a {shlex.quote(src)} {shlex.quote(inside)}", timeout_s=300)
            if not res.ok:
                raise SandboxError(f"download {src} -> {dst}: exit {res.returncode}: {res.stderr.strip()}")
            await asyncio.to_thread(copy_path, self.session_dir / staged, Path(dst))
        finally:
            await asyncio.to_thread(_remove, self.session_dir / staged)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
