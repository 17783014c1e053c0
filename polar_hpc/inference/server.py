"""Inference server job body: start SGLang (or the reference server), wait until ready, publish, supervise.

``polar-hpc serve-inference --run-dir RUN --index N`` (what the launcher's job runs, on every node of the job):

1. builds the command from ``InferenceConfig`` (``python -m polar_hpc.inference.sglang_launch ...``, SGLang's
   ``launch_server`` with the API key passed in the environment, or for ``engine = "reference"``
   ``polar-hpc serve-reference ...``), with the host bound to this node and a free port;
2. gives the server its own scratch dir on node-local storage (``TMPDIR``, Triton/flashinfer/inductor caches);
3. waits for ``/health_generate`` with ``startup_timeout_s`` while checking the process is alive (only node
   rank 0 serves HTTP in a multi-node server);
4. publishes ``endpoints/inference-N.json`` atomically, forwards SIGTERM/SIGINT to the server, removes the
   endpoint when the server exits and exits with the server's status.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

import msgspec

from polar_hpc.config.run import InferenceConfig
from polar_hpc.log import get_logger
from polar_hpc.util.readiness import ServerStartError, stop_process, wait_healthy
from polar_hpc.wire.endpoints import Endpoint, advertised_host, remove_endpoint, write_endpoint
from polar_hpc.wire.rundir import RunDir, component_name
from polar_hpc.wire.security import API_KEY_ENV, run_api_key

log = get_logger("inference.server")
SGLANG_DETERMINISTIC = "--enable-deterministic-inference"
"""SGLang samples with a request's ``sampling_seed`` only when launched with this flag (else it ignores the seed)."""


def seeds_honoured(cfg: InferenceConfig) -> bool | None:
    """Whether the engine samples each request with its ``sampling_seed``: the reference server always, SGLang with
    ``SGLANG_DETERMINISTIC`` in ``extra_args``; None for an external server (not known here)."""
    if cfg.engine == "external":
        return None
    return cfg.engine == "reference" or SGLANG_DETERMINISTIC in cfg.extra_args


class Topology(msgspec.Struct, kw_only=True, frozen=True):
    """Where this process sits in a (possibly multi-node) server."""

    nnodes: int = 1
    node_rank: int = 0
    head_host: str | None = None
    dist_init_port: int | None = None
    job_id: str | None = None


def slurm_topology(env: dict[str, str] | None = None) -> Topology:
    """Read the node layout of the current Slurm job from its environment (single node outside Slurm)."""
    env = dict(os.environ) if env is None else env
    job_id = env.get("SLURM_JOB_ID")
    nnodes = int(env.get("SLURM_JOB_NUM_NODES") or env.get("SLURM_NNODES") or 1)
    if job_id is None or nnodes <= 1:
        return Topology(job_id=job_id)
    hosts = expand_nodelist(env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or "")
    return Topology(
        nnodes=nnodes,
        node_rank=int(env.get("SLURM_NODEID") or 0),
        head_host=hosts[0] if hosts else None,
        dist_init_port=20000 + int(job_id) % 20000,
        job_id=job_id,
    )


def expand_nodelist(nodelist: str) -> list[str]:
    """Hostnames of a Slurm nodelist (``scontrol show hostnames``; plain comma lists without it)."""
    if not nodelist:
        return []
    if "[" in nodelist and shutil.which("scontrol"):
        out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, timeout=30)
        if out.returncode == 0:
            return out.stdout.split()
    return [h for h in nodelist.split(",") if h]


def free_port(host: str = "") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def sglang_command(
    cfg: InferenceConfig,
    *,
    model_path: str,
    host: str,
    port: int,
    topology: Topology | None = None,
    python: str = sys.executable,
) -> list[str]:
    """SGLang's arguments, run through ``sglang_launch``: the API key (``--api-key``; every route but
    ``/health*`` then needs ``Authorization: Bearer``) goes in ``API_KEY_ENV``, never on the command line.
    ``--incremental-streaming-output`` only changes streamed calls (``engine.stream`` reads either form)."""
    topology = topology or Topology()
    cmd = [python, "-m", "polar_hpc.inference.sglang_launch", "--model-path", model_path, "--host", host]
    cmd += ["--port", str(port)]
    cmd += ["--served-model-name", cfg.served_model_name, "--tp-size", str(cfg.tp), "--dp-size", str(cfg.dp)]
    cmd += ["--context-length", str(cfg.context_length)]
    cmd += ["--incremental-streaming-output"]  # streamed chunks carry deltas, not everything so far (O(n²) bytes)
    if cfg.mem_fraction_static is not None:
        cmd += ["--mem-fraction-static", str(cfg.mem_fraction_static)]
    if cfg.random_seed is not None:
        cmd += ["--random-seed", str(cfg.random_seed)]
    if topology.nnodes > 1:
        if topology.head_host is None or topology.dist_init_port is None:
            raise ValueError(f"a {topology.nnodes}-node server needs the head host and a dist-init port, "
                             f"got {topology}")
        cmd += ["--nnodes", str(topology.nnodes), "--node-rank", str(topology.node_rank)]
        cmd += ["--dist-init-addr", f"{topology.head_host}:{topology.dist_init_port}"]
    return cmd + list(cfg.extra_args)


def reference_server_command(
    cfg: InferenceConfig, *, model_path: str, host: str, port: int, python: str = sys.executable
) -> list[str]:
    from polar_hpc.reference.options import ReferenceOptions

    options = ReferenceOptions(host=host, port=port, seed=cfg.random_seed or 0, context_length=cfg.context_length,
                               served_model_name=cfg.served_model_name)
    return options.command(model_path, python) + list(cfg.extra_args)


CONTAINER_PYTHON = "python3"
"""The interpreter an ``inference.container`` image runs the server with."""


def container_prefix(image: str, model_path: str, *, env: dict[str, str] | None = None,
                     binary: str | None = None) -> list[str]:
    """``apptainer exec --nv`` with what the server needs visible inside: the model and the polar-hpc code on
    ``PYTHONPATH`` (the run's frozen copy). The host environment passes through (Apptainer's default), so the API
    key stays off the command line."""
    from polar_hpc.runtime.apptainer import find_binary

    env = dict(os.environ) if env is None else env
    cmd = [binary or find_binary() or "apptainer", "exec", "--nv"]
    binds = [model_path, *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    for path in dict.fromkeys(binds):
        cmd += ["--bind", f"{path}:{path}:ro"]
    return [*cmd, image]


def server_scratch(index: int, base: str | None = None) -> Path:
    """Node-local scratch of one server: ``$SLURM_TMPDIR`` or ``$TMPDIR`` or /tmp, then a per-server folder."""
    root = Path(base or os.environ.get("SLURM_TMPDIR") or os.environ.get("TMPDIR") or "/tmp")
    path = root / f"polar-inference-{index}-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def server_env(scratch: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    tmp = scratch / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env["TMPDIR"] = str(tmp)
    env["TRITON_CACHE_DIR"] = str(scratch / "triton")
    env["TORCHINDUCTOR_CACHE_DIR"] = str(scratch / "inductor")
    env["FLASHINFER_WORKSPACE_BASE"] = str(scratch / "flashinfer")
    return env


class ServerJob:
    """One inference server, supervised. ``run()`` blocks until the server exits and returns its status."""

    def __init__(
        self,
        cfg: InferenceConfig,
        *,
        index: int,
        run_dir: str | Path,
        model_path: str,
        topology: Topology | None = None,
        host: str | None = None,
        bind_host: str | None = None,
        log_dir: str | Path | None = None,
    ) -> None:
        self.cfg = cfg
        self.index = index
        self.name = component_name("inference", index)
        self.run_dir = Path(run_dir)
        self.model_path = model_path
        self.topology = topology or slurm_topology()
        self.host = host or advertised_host()
        self.bind_host = bind_host or self.host
        self.log_dir = Path(log_dir) if log_dir else RunDir(run_dir).logs("inference")
        self.proc: subprocess.Popen[bytes] | None = None
        self._stopping = False
        self.api_key = run_api_key(self.run_dir)

    def command(self, port: int) -> list[str]:
        # Either engine takes the API key from its environment (see :meth:`env`), never from the command line.
        python = CONTAINER_PYTHON if self.cfg.container else (self.cfg.python or sys.executable)
        if self.cfg.engine == "reference":
            cmd = reference_server_command(self.cfg, model_path=self.model_path, host=self.bind_host, port=port,
                                           python=python)
        elif self.cfg.engine == "sglang":
            cmd = sglang_command(self.cfg, model_path=self.model_path, host=self.bind_host, port=port,
                                 topology=self.topology, python=python)
        else:
            raise ValueError(f"inference.engine {self.cfg.engine!r} has no server to run "
                             "(expected sglang or reference)")
        return container_prefix(self.cfg.container, self.model_path) + cmd if self.cfg.container else cmd

    def run(self) -> int:
        port = free_port(self.bind_host)
        cmd = self.command(port)
        scratch = server_scratch(self.index)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{self.name}-node{self.topology.node_rank}.log"
        log.info("starting %s: %s (log %s)", self.name, " ".join(cmd), log_path)
        previous = {sig: signal.signal(sig, self._forward) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            with open(log_path, "ab") as out:
                self.proc = subprocess.Popen(
                    cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=self.env(scratch), start_new_session=True,
                )
            if self.topology.node_rank == 0:
                url = f"http://{self.host}:{port}"
                wait_healthy(url, proc=self.proc, timeout_s=self.cfg.startup_timeout_s, log_path=log_path)
                if not self._stopping:
                    self._load_policy(url)
                    write_endpoint(self.run_dir, self.endpoint(url, port, log_path))
                    log.info("%s ready at %s", self.name, url)
            code = self.proc.wait()
            log.info("%s exited with status %d", self.name, code)
            return code
        except ServerStartError as err:
            log.error("%s did not start: %s", self.name, err)
            assert self.proc is not None
            code = stop_process(self.proc)
            return code if code > 0 else 1
        except BaseException:
            if self.proc is not None:
                stop_process(self.proc)
            raise
        finally:
            if self.topology.node_rank == 0:
                remove_endpoint(self.run_dir, self.name)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            shutil.rmtree(scratch, ignore_errors=True)

    def _load_policy(self, url: str) -> None:
        """A server restarted under a trainer (its job requeued, or restarted in place) serves the weights the
        trainer last loaded (``policy.json``), as that weight version, before any gateway sees its endpoint."""
        policy = RunDir(self.run_dir).policy()
        if policy is None:
            return
        import asyncio

        from polar_hpc.engine.engine import SGLangEngine

        async def load() -> None:
            engine = SGLangEngine([url], api_key=self.api_key)
            try:
                await engine.update_weights_from_disk(policy.path, policy.version)
            finally:
                await engine.close()

        try:
            asyncio.run(load())
        except Exception as err:
            raise ServerStartError(f"{self.name} cannot load the trainer's newest weights (version {policy.version}, "
                                   f"{policy.path}): {err}") from err
        log.info("%s serves the trainer's newest weights: version %s from %s", self.name, policy.version,
                 policy.path)

    def env(self, scratch: Path) -> dict[str, str]:
        env = server_env(scratch)
        if self.api_key:
            env[API_KEY_ENV] = self.api_key
        return env

    def endpoint(self, url: str, port: int, log_path: Path) -> Endpoint:
        assert self.proc is not None
        return Endpoint(
            name=self.name, url=url, pid=self.proc.pid, host=self.host, port=port, started_at=time.time(),
            kind=self.cfg.engine, model=self.model_path, served_model_name=self.cfg.served_model_name,
            log_path=str(log_path), job_id=self.topology.job_id,
        )

    def _forward(self, signum: int, _: FrameType | None) -> None:
        self._stopping = True
        if self.proc is not None and self.proc.poll() is None:
            log.info("%s: forwarding signal %d to pid %d", self.name, signum, self.proc.pid)
            self.proc.send_signal(signum)


def run_from_run_dir(run_dir: str | Path, index: int, config_path: str | Path | None = None) -> int:
    from polar_hpc.assets import resolve_model
    from polar_hpc.config import load_recipe

    cfg = (load_recipe(config_path) if config_path else RunDir(run_dir).load_config()).inference
    model_path = str(resolve_model(cfg.model))
    return ServerJob(cfg, index=index, run_dir=run_dir, model_path=model_path).run()
