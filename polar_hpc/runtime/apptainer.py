"""``apptainer``: one Apptainer instance per session, commands through ``exec instance://NAME``.

Built on the CLI, not spython: spython hard-codes the ``singularity`` binary, blocks the event loop, calls
``sys.exit`` on a missing bind source and gives no handle on the process tree to kill on timeout. The argv
builders below are pure and golden-tested; they follow the Polar reference's sandbox (host-backed overlay dir,
``--no-mount home,cwd``, ``--cleanenv``, ``--nv`` for GPUs, optional ``--net --network none``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
from pathlib import Path

import msgspec

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.log import get_logger
from polar_hpc.runtime.backend import Backend, Finding
from polar_hpc.runtime.base import (
    SANDBOX_FORWARDER,
    SANDBOX_PROXY_SOCKET,
    SANDBOX_SESSION_DIR,
    Runtime,
    SandboxStartError,
    SandboxUnavailable,
)
from polar_hpc.runtime.bwrap import FORWARDER_SRC, forwarder_prefix, parse_bind
from polar_hpc.runtime.common import SandboxBase
from polar_hpc.runtime.handoff import ServeListener
from polar_hpc.runtime.naming import instance_name, instance_prefix
from polar_hpc.runtime.process import kill_tree, run_command
from polar_hpc.util.fs import write_atomic

log = get_logger("runtime")
STOP_TIMEOUT_S = 30


def cached_image(spec: RuntimeSpec) -> RuntimeSpec:
    """The spec with a ``docker://`` image replaced by its SIF in ``runtime.image_cache`` when that is there
    (``polar-hpc images prepare`` writes it); otherwise unchanged (Apptainer then pulls into its own cache)."""
    if not spec.image or not spec.image_cache or not spec.image.startswith("docker://"):
        return spec
    from polar_hpc.images.prepare import sif_path

    sif = sif_path(spec.image_cache, spec.image)
    if not sif.is_file():
        log.warning("apptainer: %s is not in runtime.image_cache (%s): pulling it on this node (run "
                    "`polar-hpc images prepare` first)", spec.image, sif)
        return spec
    return msgspec.structs.replace(spec, image=str(sif))


def start_argv(
    spec: RuntimeSpec,
    *,
    name: str,
    session_dir: Path,
    overlay_dir: Path,
    work_dir: Path,
    proxy_socket: Path | None = None,
    binary: str = "apptainer",
) -> list[str]:
    if not spec.image:
        raise ValueError("runtime.image: the apptainer backend needs a SIF path or a docker:// URI, got none")
    argv = [binary, "instance", "start", "--cleanenv", "--no-mount", "home,cwd", "--contain",
            "--workdir", str(work_dir), "--overlay", str(overlay_dir)]
    if spec.gpus > 0:
        argv.append("--nv")
    if spec.network == "none":
        argv += ["--net", "--network", "none"]
    argv += ["--bind", f"{session_dir}:{SANDBOX_SESSION_DIR}"]
    if spec.network == "none" and proxy_socket is not None:
        argv += ["--bind", f"{FORWARDER_SRC}:{SANDBOX_FORWARDER}:ro",
                 "--bind", f"{proxy_socket}:{SANDBOX_PROXY_SOCKET}"]
    for item in spec.binds:
        src, dst = parse_bind(item)
        argv += ["--bind", f"{src}:{dst}:ro"]
    return [*argv, spec.image, name]


def env_file_text(env: dict[str, str]) -> str:
    """``KEY='value'`` lines, shell-quoted: Apptainer evaluates ``--env-file`` with a shell interpreter."""
    for key in env:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ValueError(f"environment variable name {key!r} is not valid in a sandbox (letters, digits, _)")
    return "".join(f"{k}={shlex.quote(env[k])}\n" for k in sorted(env))


def write_env_file(folder: Path, env: dict[str, str]) -> Path:
    """The env file of one exec, mode 0600 in the session's private scratch; named by a digest of its content,
    so repeated execs with the same environment reuse it."""
    text = env_file_text(env).encode()
    path = folder / f"env-{hashlib.sha256(text).hexdigest()[:16]}"
    if not path.exists():
        write_atomic(path, text, 0o600)
    return path


def exec_argv(
    name: str, cmd: list[str], env_file: Path, cwd: str, *, bridged: bool = False, binary: str = "apptainer"
) -> list[str]:
    """``--cleanenv --env-file``: the command gets the variables of ``env_file`` and Apptainer's own, nothing of
    the host; values stay out of the argv (``/proc/<pid>/cmdline`` is readable by every user of the node) and
    are not split on commas as ``--env`` would."""
    argv = [binary, "exec", "--cleanenv", "--env-file", str(env_file), "--pwd", cwd, f"instance://{name}"]
    if bridged:
        argv += forwarder_prefix()
    return argv + cmd


def stop_argv(name: str, *, binary: str = "apptainer") -> list[str]:
    return [binary, "instance", "stop", "-t", str(STOP_TIMEOUT_S), name]


def list_argv(name: str, *, binary: str = "apptainer") -> list[str]:
    return [binary, "instance", "list", "--json", name]


def list_all_argv(*, binary: str = "apptainer") -> list[str]:
    return [binary, "instance", "list", "--json"]


def instances_with_prefix(list_json: str, prefix: str) -> list[str]:
    """Instance names from ``instance list --json`` output that start with ``prefix``."""
    try:
        items = json.loads(list_json or "{}").get("instances") or []
    except (ValueError, AttributeError) as err:
        raise ValueError(f"`instance list --json` output is not the expected JSON: {list_json[:200]!r}") from err
    names = [str(i.get("instance", "")) for i in items if isinstance(i, dict)]
    return sorted(n for n in names if n.startswith(prefix))


async def stop_stale_instances(run_dir: Path, rank: int, *, binary: str | None = None) -> list[str]:
    """Stop the instances of this run+rank left by an earlier life of the rank (a crash, a preemption).

    Call before the rank starts any session. Returns the names stopped; nothing when Apptainer is absent."""
    binary = binary or find_binary()
    if not binary:
        return []
    env = {k: os.environ[k] for k in ("PATH", "XDG_RUNTIME_DIR", "HOME") if k in os.environ}
    listed = await run_command(list_all_argv(binary=binary), env=env, timeout_s=60)
    if not listed.ok:
        log.warning("apptainer instance list: exit %d: %s", listed.returncode, listed.stderr.strip()[-500:])
        return []
    stale = instances_with_prefix(listed.stdout, instance_prefix(run_dir, rank))
    for name in stale:
        res = await run_command(stop_argv(name, binary=binary), env=env, timeout_s=STOP_TIMEOUT_S + 10)
        if res.ok:
            log.warning("stopped apptainer instance %s left by an earlier life of rank %d", name, rank)
        else:
            log.error("apptainer instance stop %s: exit %d: %s", name, res.returncode, res.stderr.strip()[-500:])
    return stale


def find_binary() -> str | None:
    return shutil.which("apptainer") or shutil.which("singularity")


class ApptainerRuntime(SandboxBase):
    backend = "apptainer"

    def __init__(self, spec: RuntimeSpec, session_dir: Path, *, proxy_socket: Path | None = None) -> None:
        super().__init__(spec, session_dir, proxy_socket=proxy_socket)
        self.binary = find_binary() or ""
        self.name = instance_name(self.session_dir)
        self.is_root = os.geteuid() == 0
        self._instance_pid: int | None = None

    def _host_env(self) -> dict[str, str]:
        keep = ("PATH", "APPTAINER_CACHEDIR", "APPTAINER_TMPDIR", "SINGULARITY_CACHEDIR", "XDG_RUNTIME_DIR", "HOME")
        return {k: os.environ[k] for k in keep if k in os.environ}

    async def _start(self) -> None:
        if not self.binary:
            raise SandboxUnavailable(
                "runtime backend 'apptainer': neither `apptainer` nor `singularity` is on PATH "
                "(use backend 'bwrap' where Apptainer is not installed)"
            )
        overlay = self.scratch / "overlay"
        work = self.scratch / "work"
        overlay.mkdir()
        work.mkdir()
        argv = start_argv(cached_image(self.spec), name=self.name, session_dir=self.session_dir, overlay_dir=overlay,
                          work_dir=work, proxy_socket=self.proxy_socket, binary=self.binary)
        res = await run_command(argv, env=self._host_env(), timeout_s=self.spec.start_timeout_s)
        if not res.ok:
            raise SandboxStartError(
                f"apptainer instance {self.name} did not start (exit {res.returncode}"
                f"{', timed out' if res.timed_out else ''}): {res.stderr.strip()[-1000:]}"
            )
        listed = await run_command(list_argv(self.name, binary=self.binary), env=self._host_env(), timeout_s=30)
        try:
            self._instance_pid = int(json.loads(listed.stdout)["instances"][0]["pid"])
        except (ValueError, KeyError, IndexError, TypeError):
            log.warning("apptainer instance %s: no pid in `instance list --json` output %r", self.name,
                        listed.stdout[:200])

    async def _stop(self) -> None:
        if not self.binary or self._scratch is None or not (self._scratch / "overlay").exists():
            return
        res = await run_command(stop_argv(self.name, binary=self.binary), env=self._host_env(),
                                timeout_s=STOP_TIMEOUT_S + 10)
        if not res.ok:
            log.warning("apptainer instance stop %s: exit %d: %s", self.name, res.returncode, res.stderr.strip())
        if self._instance_pid is not None:
            await kill_tree(self._instance_pid)

    def _wrap(self, argv: list[str], env: dict[str, str], cwd: str, *,
              handoff_fd: int | None = None) -> tuple[list[str], dict[str, str], Path | None]:
        host_cwd = self.host_path(cwd)
        if host_cwd is not None:
            host_cwd.mkdir(parents=True, exist_ok=True)
        env_file = write_env_file(self.scratch, env)
        return (exec_argv(self.name, argv, env_file, cwd, bridged=self.bridged, binary=self.binary),
                self._host_env(), None)

    def host_path(self, sandbox_path: str) -> Path | None:
        """Only the session dir is mapped; /tmp lives under Apptainer's --workdir layout, reached by exec."""
        p = sandbox_path.rstrip("/") or "/"
        root = self.sandbox_session_dir
        if p == root or p.startswith(root + "/"):
            return self.session_dir / p[len(root) :].lstrip("/")
        return None


class ApptainerBackend(Backend):
    name = "apptainer"
    images_engine = "apptainer"
    prepare_hint = "runtime.image_cache with `polar-hpc images prepare RECIPE --cache DIR`"

    def make(self, spec: RuntimeSpec, session_dir: Path, *, proxy_socket: Path | None = None,
             serve_listener: ServeListener | None = None) -> Runtime:
        return ApptainerRuntime(spec, session_dir, proxy_socket=proxy_socket)

    def missing(self) -> str | None:
        return None if find_binary() else ("runtime.backend = 'apptainer' but neither apptainer nor singularity is "
                                           "on PATH")

    def doctor(self, chosen: bool) -> list[Finding]:
        app = find_binary()
        return [Finding(name="apptainer", ok=app is not None, required=chosen,
                      detail=app or "neither apptainer nor singularity is on PATH",
                      fix="" if app else "module load apptainer (most clusters), or install Apptainer")]

    def image_missing(self, rt: RuntimeSpec, have: set[str] | None) -> bool:
        if not rt.image:
            return True
        if rt.image.startswith("docker://"):
            from polar_hpc.images.prepare import sif_path

            return not rt.image_cache or not sif_path(rt.image_cache, rt.image).is_file()
        return not Path(rt.image).exists()

    async def stop_stale(self, run_dir: Path, rank: int) -> None:
        if find_binary() is not None:
            await stop_stale_instances(run_dir, rank)


BACKEND = ApptainerBackend()
