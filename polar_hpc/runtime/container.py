"""``docker`` / ``podman``: one container per session, every command through ``exec`` into it.

The container is started detached with ``--rm`` from a local image (never pulled at start: ``polar-hpc images
prepare`` fills the cache), the session dir bound at ``/polar/session``, a private ``/tmp`` backed by the
session's scratch dir, CPU/memory/pids limits, a small capability set, no new privileges, and labels naming the
run, rank and session. With ``network = "none"`` it has only ``lo`` and reaches the proxy through its Unix socket
bound in, behind the same in-sandbox forwarder as bwrap.

Nothing outlives the gateway: the container's PID 1 (a shell, which also reaps the orphans of killed commands)
waits on an ``flock`` of a file in the session dir that the gateway holds for the container's life. When the
gateway dies, SIGKILL included, the kernel drops the lock, PID 1 exits, and ``--rm`` removes the container. A
restarted rank also removes its run+rank's containers by label
(:func:`remove_stale_containers`). Killing a ``podman exec`` client does not kill what it started in the
container, so every command carries a marker variable, and a timed-out or cancelled command's processes are found
by it in the container's pid namespace and killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import uuid
from pathlib import Path
from typing import IO

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.log import get_logger
from polar_hpc.runtime.backend import Backend, Finding
from polar_hpc.runtime.base import (
    SANDBOX_FORWARDER,
    SANDBOX_PROXY_SOCKET,
    SANDBOX_SESSION_DIR,
    ExecResult,
    Runtime,
    SandboxStartError,
    SandboxUnavailable,
)
from polar_hpc.runtime.bwrap import FORWARDER_SRC, forwarder_prefix, parse_bind
from polar_hpc.runtime.common import SandboxBase
from polar_hpc.runtime.handoff import ServeListener
from polar_hpc.runtime.naming import instance_name, owner_tag, session_owner
from polar_hpc.runtime.process import run_command

log = get_logger("runtime")

ENGINES = ("docker", "podman")
LABEL = "polar-hpc"
"""Every container carries ``polar-hpc=1``, ``polar-hpc.owner=<run8>-r<rank>`` and ``polar-hpc.session=<dir>``."""
ALIVE_FILE = ".polar-alive"
"""In the session dir: the gateway holds an exclusive ``flock`` on it while the container lives."""
EXEC_MARK = "POLAR_EXEC_ID"
CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID")
"""What root in the container keeps (file ownership and modes, signals, changing user); everything else goes."""
CLIENT_ENV = ("PATH", "HOME", "TMPDIR", "XDG_RUNTIME_DIR", "CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF",
              "DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT")
"""Host variables the engine's client itself needs. A sandbox variable of the same name goes by value on the
argv; every other one goes by name (``-e NAME``), its value in the client's environment, never on an argv."""
RM_TIMEOUT_S = 60

_PID1 = f"""lock={SANDBOX_SESSION_DIR}/{ALIVE_FILE}
if command -v flock >/dev/null 2>&1; then flock "$lock" true & wait $!; exit 0; fi
if command -v python3 >/dev/null 2>&1; then
  python3 -c 'import fcntl, sys; fcntl.flock(open(sys.argv[1]), fcntl.LOCK_EX)' "$lock" & wait $!; exit 0
fi
echo "polar-hpc: neither flock nor python3 in the image: the container outlives a killed gateway \
until its rank restarts" >&2
while :; do sleep 3600 & wait $!; done
"""


def image_ref(image: str | None) -> str:
    if not image:
        raise ValueError("runtime.image: the docker / podman backends need a local image name, got none")
    return image.removeprefix("docker://")


def run_argv(
    spec: RuntimeSpec,
    *,
    engine: str,
    name: str,
    session_dir: Path,
    tmp_dir: Path,
    owner: str | None,
    proxy_socket: Path | None = None,
    binary: str | None = None,
) -> list[str]:
    """``<engine> run -d --rm ...``: the session's container (pure: golden-tested)."""
    argv = [binary or engine, "run", "-d", "--rm", "--name", name, "--pull", "never", "--hostname", "polar",
            "--label", f"{LABEL}=1", "--label", f"{LABEL}.owner={owner or 'none'}",
            "--label", f"{LABEL}.session={session_dir.name}",
            "--network", "none" if spec.network == "none" else "host",
            "--cap-drop", "all", *[a for c in CAPABILITIES for a in ("--cap-add", c)],
            "--security-opt", "no-new-privileges"]
    if spec.cpus is not None:
        argv += ["--cpus", f"{spec.cpus:g}"]
    if spec.memory_gb is not None:
        argv += ["--memory", f"{int(spec.memory_gb * 1024)}m"]
    if spec.pids_limit is not None:
        argv += ["--pids-limit", str(spec.pids_limit)]
    if spec.gpus > 0:
        argv += ["--gpus", str(spec.gpus)] if engine == "docker" else ["--device", "nvidia.com/gpu=all"]
    argv += ["-v", f"{session_dir}:{SANDBOX_SESSION_DIR}", "-v", f"{tmp_dir}:/tmp"]
    if spec.network == "none" and proxy_socket is not None:
        argv += ["-v", f"{FORWARDER_SRC}:{SANDBOX_FORWARDER}:ro", "-v", f"{proxy_socket}:{SANDBOX_PROXY_SOCKET}"]
    for item in spec.binds:
        src, dst = parse_bind(item)
        argv += ["-v", f"{src}:{dst}:ro"]
    return [*argv, "--entrypoint", "/bin/sh", image_ref(spec.image), "-c", _PID1]


def exec_argv(
    name: str, cmd: list[str], env: dict[str, str], cwd: str, *, engine: str, bridged: bool = False,
    binary: str | None = None,
) -> tuple[list[str], dict[str, str]]:
    """(argv, what goes into the client's environment) of one ``exec``: values stay off the argv
    (``/proc/<pid>/cmdline`` is readable by every user of the node) except for :data:`CLIENT_ENV` names."""
    argv = [binary or engine, "exec", "-w", cwd]
    by_name: dict[str, str] = {}
    for key in sorted(env):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ValueError(f"environment variable name {key!r} is not valid in a sandbox (letters, digits, _)")
        if key in CLIENT_ENV:
            argv += ["-e", f"{key}={env[key]}"]
        else:
            argv += ["-e", key]
            by_name[key] = env[key]
    argv.append(name)
    if bridged:
        argv += forwarder_prefix()
    return argv + cmd, by_name


def rm_argv(name: str, *, engine: str, binary: str | None = None) -> list[str]:
    extra = ["-t", "0", "--ignore"] if engine == "podman" else []
    return [binary or engine, "rm", "-f", *extra, name]


def ps_owner_argv(owner: str, *, engine: str, binary: str | None = None) -> list[str]:
    return [binary or engine, "ps", "-a", "-q", "--filter", f"label={LABEL}.owner={owner}"]


def client_env() -> dict[str, str]:
    return {k: os.environ[k] for k in CLIENT_ENV if k in os.environ}


def find_engine(engine: str) -> str | None:
    return shutil.which(engine)


def _pid_ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def marked_pids(pid_ns: str, mark: str) -> list[int]:
    """Pids in the pid namespace ``pid_ns`` whose environment holds ``POLAR_EXEC_ID=<mark>``."""
    needle = f"{EXEC_MARK}={mark}".encode()
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            if os.readlink(f"/proc/{pid}/ns/pid") != pid_ns:
                continue
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle in environ:
            found.append(pid)
    return found


async def remove_stale_containers(run_dir: Path, rank: int, engine: str, *, binary: str | None = None) -> list[str]:
    """Remove the containers of this run+rank left by an earlier life of the rank; returns their ids."""
    binary = binary or find_engine(engine)
    if not binary:
        return []
    listed = await run_command(ps_owner_argv(owner_tag(run_dir, rank), engine=engine, binary=binary),
                               env=client_env(), timeout_s=RM_TIMEOUT_S)
    if not listed.ok:
        log.warning("%s ps: exit %d: %s", engine, listed.returncode, listed.stderr.strip()[-500:])
        return []
    stale = listed.stdout.split()
    for cid in stale:
        res = await run_command(rm_argv(cid, engine=engine, binary=binary), env=client_env(), timeout_s=RM_TIMEOUT_S)
        if res.ok:
            log.warning("removed %s container %s left by an earlier life of rank %d", engine, cid, rank)
        else:
            log.error("%s rm %s: exit %d: %s", engine, cid, res.returncode, res.stderr.strip()[-500:])
    return stale


class ContainerRuntime(SandboxBase):
    """One container per session (``backend`` is ``docker`` or ``podman``)."""

    def __init__(self, spec: RuntimeSpec, session_dir: Path, *, proxy_socket: Path | None = None) -> None:
        super().__init__(spec, session_dir, proxy_socket=proxy_socket)
        if spec.backend not in ENGINES:
            raise ValueError(f"runtime.backend: expected one of {', '.join(ENGINES)}, got {spec.backend!r}")
        self.backend = spec.backend
        self.binary = find_engine(spec.backend) or ""
        self.name = instance_name(self.session_dir)
        self.is_root = True
        self._alive: IO[bytes] | None = None
        self._pid_ns: str | None = None
        self._started = False

    async def _start(self) -> None:
        if not self.binary:
            hint = "apt-get install podman runc" if self.backend == "podman" else "apt-get install docker.io"
            raise SandboxUnavailable(f"runtime backend {self.backend!r}: no `{self.backend}` on PATH ({hint})")
        (self.scratch / "tmp").chmod(0o1777)  # as a real /tmp: any user of the image may write it
        self._alive = open(self.session_dir / ALIVE_FILE, "wb")  # noqa: SIM115 - held until stop
        fcntl.flock(self._alive, fcntl.LOCK_EX | fcntl.LOCK_NB)
        argv = run_argv(self.spec, engine=self.backend, name=self.name, session_dir=self.session_dir,
                        tmp_dir=self.scratch / "tmp", owner=session_owner(self.session_dir),
                        proxy_socket=self.proxy_socket, binary=self.binary)
        self._started = True
        # conmon (podman's container monitor: 2.1.6 here, fixed upstream in 2024) creates an empty `oom` file in
        # its working directory, podman's, when the container's cgroup sees an OOM kill (containers/conmon#504):
        # the engine runs from the session's scratch dir (removed at stop), not from wherever the rank runs (the
        # repository root under pytest)
        res = await run_command(argv, env=client_env(), cwd=self.scratch, timeout_s=self.spec.start_timeout_s)
        if not res.ok:
            hint = ""
            if "image not known" in res.stderr or "No such image" in res.stderr:
                hint = " (images are not pulled at start: run `polar-hpc images prepare` for the task set)"
            raise SandboxStartError(
                f"{self.backend} container {self.name} did not start (exit {res.returncode}"
                f"{', timed out' if res.timed_out else ''}){hint}: {res.stderr.strip()[-1000:]}"
            )
        inspect = await run_command([self.binary, "inspect", "-f", "{{.State.Pid}}", self.name], env=client_env(),
                                    timeout_s=30)
        pid = inspect.stdout.strip()
        self._pid_ns = _pid_ns(int(pid)) if pid.isdigit() and int(pid) > 0 else None
        if self._pid_ns is None:
            log.warning("%s container %s: its processes are not visible here (pid %r); a timed-out command is "
                        "stopped only with the container", self.backend, self.name, pid)

    async def _stop(self) -> None:
        if self._alive is not None:
            self._alive.close()  # PID 1 gets the lock and exits; --rm removes the container
            self._alive = None
        if self._started and self.binary:
            res = await run_command(rm_argv(self.name, engine=self.backend, binary=self.binary), env=client_env(),
                                    timeout_s=RM_TIMEOUT_S)
            if not res.ok and "no such container" not in res.stderr.lower():
                log.warning("%s rm %s: exit %d: %s", self.backend, self.name, res.returncode, res.stderr.strip())
        (self.session_dir / ALIVE_FILE).unlink(missing_ok=True)

    async def exec(
        self,
        cmd: str | list[str],
        *,
        timeout_s: float | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        log_path: Path | None = None,
    ) -> ExecResult:
        mark = uuid.uuid4().hex
        try:
            res = await super().exec(cmd, timeout_s=timeout_s, env={**(env or {}), EXEC_MARK: mark}, cwd=cwd,
                                     log_path=log_path)
        except BaseException:
            await asyncio.shield(self._kill_marked(mark))
            raise
        if res.timed_out or res.returncode < 0:
            await self._kill_marked(mark)
        return res

    async def _kill_marked(self, mark: str) -> None:
        """Kill what a timed-out or cancelled command left running in the container."""
        if self._pid_ns is None:
            return
        pid_ns = self._pid_ns
        for _ in range(5):  # a dying shell may still fork: repeat until none is left
            pids = await asyncio.to_thread(marked_pids, pid_ns, mark)
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            await asyncio.sleep(0.05)

    def _wrap(self, argv: list[str], env: dict[str, str], cwd: str, *,
              handoff_fd: int | None = None) -> tuple[list[str], dict[str, str], Path | None]:
        host_cwd = self.host_path(cwd)
        if host_cwd is not None:
            host_cwd.mkdir(parents=True, exist_ok=True)
        full, by_name = exec_argv(self.name, argv, env, cwd, engine=self.backend, bridged=self.bridged,
                                  binary=self.binary)
        return full, {**client_env(), **by_name}, None


def normal_ref(ref: str) -> str:
    """``docker.io/library/x:latest`` form of an image reference, as podman lists it."""
    ref = ref.removeprefix("docker://")
    first, _, rest = ref.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        ref = f"docker.io/{ref if rest else 'library/' + ref}"
    return ref if ":" in ref.rsplit("/", 1)[-1] else f"{ref}:latest"


class ContainerBackend(Backend):
    """``docker`` or ``podman`` (``doctor_fix``: the doctor line's advice when it is missing; None: no line)."""

    sets_resources = True

    def __init__(self, name: str, doctor_fix: str | None = None) -> None:
        self.name = self.images_engine = name
        self.prepare_hint = f"{name} with `polar-hpc images prepare RECIPE`"
        self.doctor_fix = doctor_fix

    def make(self, spec: RuntimeSpec, session_dir: Path, *, proxy_socket: Path | None = None,
             serve_listener: ServeListener | None = None) -> Runtime:
        return ContainerRuntime(spec, session_dir, proxy_socket=proxy_socket)

    def missing(self) -> str | None:
        return None if find_engine(self.name) else f"runtime.backend = {self.name!r} but {self.name} is not on PATH"

    def doctor(self, chosen: bool) -> list[Finding]:
        if self.doctor_fix is None:
            return []
        found = find_engine(self.name)
        return [Finding(name=self.name, ok=found is not None, detail=found or "not installed (optional)",
                      fix="" if found else self.doctor_fix)]

    def images_here(self) -> set[str] | None:
        binary = find_engine(self.name)
        if binary is None:
            return None
        res = subprocess.run([binary, "images", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True,
                             text=True, timeout=120)
        if res.returncode != 0:
            return None
        return {normal_ref(line.strip()) for line in res.stdout.splitlines() if line.strip()}

    def image_missing(self, rt: RuntimeSpec, have: set[str] | None) -> bool:
        if not rt.image:
            return True
        return have is not None and normal_ref(rt.image) not in have

    async def stop_stale(self, run_dir: Path, rank: int) -> None:
        await remove_stale_containers(run_dir, rank, self.name)


PODMAN = ContainerBackend("podman", doctor_fix="optional: apt install podman")
DOCKER = ContainerBackend("docker")
