"""Run directory layout, the resolved config, secrets and the jobs ledger.

    <run>/                   mode 0700: only the run's owner can read anything below it
    <run>/config.toml        resolved RunConfig (what every component reads)
    <run>/secrets/           per-run secrets, mode 0700 / files 0600
    <run>/endpoints/         <name>.json published atomically by components when ready
    <run>/logs/<component>/  submitit folders and component logs
    <run>/shards/            committed HDF5 shards
    <run>/status.json        progress written by the coordinator
    <run>/jobs.json          what the launcher submitted (job ids or pids)
    <run>/cancelled.json     written by `polar-hpc cancel` (removed by `resume`)
    <run>/code/              frozen copy of the polar_hpc package used by queued jobs
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from pathlib import Path
from typing import Literal

import msgspec

from polar_hpc.config import RunConfig, dump_config, load_recipe
from polar_hpc.config.run import Backend
from polar_hpc.util.fs import write_atomic
from polar_hpc.wire.security import generate_run_keys

Component = Literal["inference", "coordinator", "gateway"]


class JobRecord(msgspec.Struct, kw_only=True):
    component: Component
    index: int
    """Server index for inference, rank for gateways, 0 for the coordinator."""
    job_id: str
    backend: Backend
    folder: str
    submitted_at: float
    pid_start: int | None = None
    """Local backend: start time (/proc/<pid>/stat field 22) of the controller whose pid is ``job_id``."""


class JobsFile(msgspec.Struct, kw_only=True):
    backend: Backend
    jobs: list[JobRecord] = msgspec.field(default_factory=list)


class CancelRecord(msgspec.Struct, kw_only=True):
    """``cancelled.json``: written by ``polar-hpc cancel`` before it signals anything; ``resume`` removes it."""

    at: float
    """Wall-clock time of the cancel."""
    grace_s: float


class RunDir:
    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()

    config_path = property(lambda self: self.root / "config.toml")
    secrets = property(lambda self: self.root / "secrets")
    endpoints = property(lambda self: self.root / "endpoints")
    shards = property(lambda self: self.root / "shards")
    status_path = property(lambda self: self.root / "status.json")
    jobs_path = property(lambda self: self.root / "jobs.json")
    code = property(lambda self: self.root / "code")
    cancelled_path = property(lambda self: self.root / "cancelled.json")

    def logs(self, component: str) -> Path:
        return self.root / "logs" / component

    def exists(self) -> bool:
        return self.config_path.is_file()

    def load_config(self) -> RunConfig:
        if not self.exists():
            raise FileNotFoundError(f"{self.root}: not a polar-hpc run directory (no config.toml)")
        return load_recipe(self.config_path)

    def read_jobs(self) -> JobsFile | None:
        if not self.jobs_path.is_file():
            return None
        return msgspec.json.decode(self.jobs_path.read_bytes(), type=JobsFile)

    def write_jobs(self, jobs: JobsFile) -> None:
        write_atomic(self.jobs_path, msgspec.json.format(msgspec.json.encode(jobs)))

    def mark_cancelled(self, grace_s: float) -> None:
        write_atomic(self.cancelled_path, msgspec.json.encode(CancelRecord(at=time.time(), grace_s=grace_s)))

    def cancelled(self) -> CancelRecord | None:
        try:
            return msgspec.json.decode(self.cancelled_path.read_bytes(), type=CancelRecord)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return None

    def run_token(self) -> str:
        return (self.secrets / "run_token").read_text().strip()


def default_run_dir(cfg: RunConfig) -> Path:
    return Path.cwd() / "runs" / f"{cfg.name}-{time.strftime('%Y%m%d-%H%M%S')}"


def freeze_code(dest: Path) -> None:
    """Copy the polar_hpc package into the run dir so queued jobs don't pick up later edits of the checkout."""
    import polar_hpc

    src = Path(polar_hpc.__file__).parent
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(src, dest / "polar_hpc", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def create_run_dir(cfg: RunConfig, root: Path) -> RunDir:
    """Make the layout, write the resolved config and the run's secrets. Refuses a non-empty existing run."""
    run = RunDir(root)
    if run.exists():
        raise FileExistsError(f"{run.root} already holds a run; use `polar-hpc resume {run.root}` or another --run-dir")
    # the root is private (0700) whatever the umask: config, logs, shards and harness settings hold session keys
    # and the run token; results are shared by copying shards out of <run>/shards
    run.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(run.root, 0o700)
    for d in (run.endpoints, run.shards, run.root / "logs"):
        d.mkdir(parents=True, exist_ok=True)
    run.secrets.mkdir(mode=0o700, exist_ok=True)
    os.chmod(run.secrets, 0o700)
    cfg = msgspec.structs.replace(cfg, launch=msgspec.structs.replace(cfg.launch, run_dir=str(run.root)))
    write_atomic(run.config_path, dump_config(cfg).encode())
    write_atomic(run.secrets / "run_token", secrets.token_urlsafe(32).encode(), mode=0o600)
    generate_run_keys(run.secrets)
    freeze_code(run.code)
    return run
