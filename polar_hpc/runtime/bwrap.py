"""``bwrap``: rootless bubblewrap sandboxes, one ``bwrap`` invocation per command.

The sandbox is a mount recipe over host-backed dirs: system dirs read-only (the host's or an image root
folder's), the session dir writable at ``/polar/session``, a private ``/tmp`` backed by the session's scratch
dir (so it survives between commands and goes with ``stop``), ``runtime.scratch_dirs`` (writable folders of the
session's own on the read-only root, e.g. a Harbor task's ``/app``, ``/tests``, ``/logs``, backed the same way),
its own pid/ipc/uts namespaces and, with ``network = "none"``, its own network namespace where only ``lo``
exists; the proxy is then reached at ``127.0.0.1:FORWARD_PORT``: a listening socket the rank's proxy serves,
handed out of the sandbox by each command's shim (``runtime.bridge = "handoff"``, ``runtime/handoff.py``), or an
in-sandbox TCP forwarder to the proxy's Unix socket bound in (``forwarder``).
"""

from __future__ import annotations

import glob
import os
import shutil
from pathlib import Path

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.log import get_logger
from polar_hpc.runtime.backend import Backend, Finding, run_quiet
from polar_hpc.runtime.base import (
    FORWARD_PORT,
    SANDBOX_FORWARDER,
    SANDBOX_PROXY_SOCKET,
    SANDBOX_SESSION_DIR,
    Runtime,
    SandboxStartError,
    SandboxUnavailable,
)
from polar_hpc.runtime.common import SandboxBase, host_python_binds
from polar_hpc.runtime.handoff import ServeListener
from polar_hpc.runtime.process import run_command

log = get_logger("runtime")

HOST_SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
"""Top-level host entries visible (read-only) when no image is given; nothing else of the host is."""
IMAGE_SKIP = frozenset({"proc", "dev", "sys", "tmp", "polar"})
SCRATCH_DIRS_NOT_UNDER = frozenset({*HOST_SYSTEM_DIRS, *IMAGE_SKIP})
"""Top-level names a ``runtime.scratch_dirs`` entry may not lie under (the system, the sandbox's own mounts)."""
FORWARDER_SRC = Path(__file__).with_name("uds_forward.py")


def parse_bind(item: str) -> tuple[str, str]:
    """``SRC[:DST]`` → (src, dst); relative or empty parts are errors."""
    src, _, dst = item.partition(":")
    dst = dst or src
    if not src.startswith("/") or not dst.startswith("/"):
        raise ValueError(f"runtime.binds: expected SRC[:DST] with absolute paths, got {item!r}")
    return src, dst


def root_args(image: str | None) -> list[str]:
    """Binds that make up the sandbox's root: the host's system dirs, or every entry of an image folder."""
    root = Path(image) if image else Path("/")
    if image and not root.is_dir():
        raise ValueError(f"runtime.image for bwrap: expected a root filesystem folder, got {image!r}")
    names = sorted(p.name for p in root.iterdir() if p.name not in IMAGE_SKIP) if image else HOST_SYSTEM_DIRS
    args: list[str] = []
    for name in names:
        path = root / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.exists():
            args += ["--ro-bind", str(path), f"/{name}"]
    return args


def scratch_binds(spec: RuntimeSpec, scratch: Path) -> list[tuple[Path, str]]:
    """(host folder, sandbox path) of each ``runtime.scratch_dirs`` entry, parents first: a folder of the session's
    own scratch dir, so no two sessions share one."""
    binds = []
    for item in spec.scratch_dirs:
        parts = item.strip("/").split("/")
        if not item.startswith("/") or not parts[0] or parts[0] in SCRATCH_DIRS_NOT_UNDER or ".." in parts:
            raise ValueError(f"runtime.scratch_dirs: expected absolute paths outside "
                             f"/{', /'.join(sorted(SCRATCH_DIRS_NOT_UNDER))}, got {item!r}")
        binds.append((scratch / "dirs" / "%".join(parts), "/" + "/".join(parts)))
    return sorted(binds, key=lambda b: b[1])


def bwrap_argv(
    spec: RuntimeSpec,
    *,
    session_dir: Path,
    tmp_dir: Path,
    cmd: list[str],
    cwd: str,
    proxy_socket: Path | None = None,
    handoff_fd: int | None = None,
    bwrap: str = "bwrap",
    root: list[str] | None = None,
    scratch: list[tuple[Path, str]] | None = None,
) -> list[str]:
    """The full host argv running ``cmd`` in the sandbox (pure: golden-tested).

    ``handoff_fd``: the command hands its listening socket to the rank over this inherited descriptor
    (``runtime.bridge = "handoff"``); the proxy's socket is then not bound in at all.

    It holds no environment: bwrap is started with exactly the sandbox's environment as its own and passes it
    on, so values (session keys, ``runtime.env`` secrets) never appear in ``/proc/<pid>/cmdline``, which every
    user of the node can read."""
    argv = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if spec.network == "none":
        argv.append("--unshare-net")
    argv += ["--die-with-parent", "--new-session", "--hostname", "polar"]
    argv += root if root is not None else root_args(spec.image)
    argv += ["--proc", "/proc", "--dev", "/dev"]
    if spec.gpus > 0:
        for dev in sorted(glob.glob("/dev/nvidia*")):
            argv += ["--dev-bind", dev, dev]
    argv += ["--bind", str(tmp_dir), "/tmp", "--bind", str(session_dir), SANDBOX_SESSION_DIR]
    for host, dst in scratch or []:
        argv += ["--bind", str(host), dst]
    for item in spec.binds:
        src, dst = parse_bind(item)
        argv += ["--ro-bind", src, dst]
    if spec.host_python:
        for src, dst in host_python_binds():
            argv += ["--ro-bind", src, dst]
    handoff = spec.network == "none" and handoff_fd is not None
    bridged = spec.network == "none" and proxy_socket is not None and not handoff
    if bridged or handoff:
        argv += ["--ro-bind", str(FORWARDER_SRC), SANDBOX_FORWARDER]
    if bridged:
        argv += ["--bind", str(proxy_socket), SANDBOX_PROXY_SOCKET]
    argv += ["--chdir", cwd, "--"]
    if handoff_fd is not None and handoff:
        argv += handoff_prefix(handoff_fd)
    elif bridged:
        argv += forwarder_prefix()
    return argv + cmd


def forwarder_prefix() -> list[str]:
    return ["python3", "-I", "-S", SANDBOX_FORWARDER, "--listen", f"127.0.0.1:{FORWARD_PORT}", "--socket",
            SANDBOX_PROXY_SOCKET, "--"]


def handoff_prefix(fd: int) -> list[str]:
    """The shim that binds the proxy's loopback address in the sandbox, hands the listener over ``fd`` and execs."""
    return ["python3", "-I", "-S", SANDBOX_FORWARDER, "--listen", f"127.0.0.1:{FORWARD_PORT}", "--handoff",
            str(fd), "--"]


class BwrapRuntime(SandboxBase):
    backend = "bwrap"
    exec_transfers = False
    handoff_capable = True
    _probed: set[str | None] = set()

    def __init__(self, spec: RuntimeSpec, session_dir: Path, *, proxy_socket: Path | None = None,
                 serve_listener: ServeListener | None = None) -> None:
        super().__init__(spec, session_dir, proxy_socket=proxy_socket, serve_listener=serve_listener)
        self.is_root = os.geteuid() == 0
        self.bwrap = shutil.which("bwrap") or ""
        self._root: list[str] | None = None
        self._scratch_binds: list[tuple[Path, str]] = []

    async def _start(self) -> None:
        if not self.bwrap:
            raise SandboxUnavailable("runtime backend 'bwrap': no `bwrap` on PATH "
                                     "(Debian/Ubuntu: apt-get install bubblewrap)")
        if self.spec.memory_gb is not None or self.spec.cpus is not None:
            log.warning("runtime backend 'bwrap' cannot limit memory or CPUs; runtime.memory_gb / cpus are ignored")
        self._root = root_args(self.spec.image)
        self._scratch_binds = scratch_binds(self.spec, self.scratch)
        for host, _ in self._scratch_binds:
            host.mkdir(parents=True)
        if self.spec.image in BwrapRuntime._probed:
            return
        res = await run_command(
            self._full_argv(["true"], SANDBOX_SESSION_DIR), env=self.base_env(), timeout_s=self.spec.start_timeout_s
        )
        if not res.ok:
            raise SandboxStartError(
                f"bwrap sandbox for {self.session_dir} did not start (exit {res.returncode}"
                f"{', timed out' if res.timed_out else ''}): {res.stderr.strip()[-1000:]}"
            )
        BwrapRuntime._probed.add(self.spec.image)

    def _full_argv(self, cmd: list[str], cwd: str, *, handoff_fd: int | None = None) -> list[str]:
        return bwrap_argv(
            self.spec,
            session_dir=self.session_dir,
            tmp_dir=self.scratch / "tmp",
            cmd=cmd,
            cwd=cwd,
            proxy_socket=None if self.handoff else self.proxy_socket,
            handoff_fd=handoff_fd if self.handoff else None,
            bwrap=self.bwrap,
            root=self._root,
            scratch=self._scratch_binds,
        )

    def host_path(self, sandbox_path: str) -> Path | None:
        p = sandbox_path.rstrip("/") or "/"
        for host, dst in reversed(self._scratch_binds):  # the deepest first
            if p == dst or p.startswith(dst + "/"):
                return host / p[len(dst):].lstrip("/")
        return super().host_path(sandbox_path)

    def _wrap(self, argv: list[str], env: dict[str, str], cwd: str, *,
              handoff_fd: int | None = None) -> tuple[list[str], dict[str, str], Path | None]:
        host_cwd = self.host_path(cwd)
        if host_cwd is not None:
            host_cwd.mkdir(parents=True, exist_ok=True)
        # bwrap (run by its absolute path) hands its own environment, exactly ``env``, to the command
        return self._full_argv(argv, cwd, handoff_fd=handoff_fd), dict(env), None


class BwrapBackend(Backend):
    name = "bwrap"
    prepare_hint = "a root filesystem folder per image"
    read_only_root = True

    def make(self, spec: RuntimeSpec, session_dir: Path, *, proxy_socket: Path | None = None,
             serve_listener: ServeListener | None = None) -> Runtime:
        return BwrapRuntime(spec, session_dir, proxy_socket=proxy_socket, serve_listener=serve_listener)

    def missing(self) -> str | None:
        return None if shutil.which("bwrap") else "runtime.backend = 'bwrap' but bubblewrap (bwrap) is not installed"

    def doctor(self, chosen: bool) -> list[Finding]:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return [Finding(name="bwrap", ok=False, detail="bubblewrap is not installed", required=chosen,
                          fix="install bubblewrap (Debian/Ubuntu: apt install bubblewrap; or ask your admins)")]
        code, text = run_quiet([bwrap, "--unshare-user", "--ro-bind", "/", "/", "--", "/bin/true"])
        return [Finding(
            name="bwrap", ok=code == 0, required=chosen,
            detail="user namespaces work" if code == 0 else f"bwrap cannot make a user namespace: {text[:200]}",
            fix="" if code == 0 else "enable unprivileged user namespaces (sysctl user.max_user_namespaces > 0, "
                                     "kernel.unprivileged_userns_clone=1) or use runtime.backend = 'apptainer'")]

    def image_missing(self, rt: RuntimeSpec, have: set[str] | None) -> bool:
        return bool(rt.image) and not Path(str(rt.image)).is_dir()

    def forwarder(self, rt: RuntimeSpec) -> bool:
        return rt.bridge != "handoff"


BACKEND = BwrapBackend()
