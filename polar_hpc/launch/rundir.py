"""Making a run dir: the layout with its modes, the resolved config, the run's secrets and the frozen code.

The layout itself, and the readers of its files, are :mod:`polar_hpc.wire.rundir`'s.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import msgspec

from polar_hpc.config import RunConfig, dump_config
from polar_hpc.util.fs import write_atomic
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.security import ensure_keys


def runs_root() -> Path:
    """Where run dirs go when neither ``--run-dir`` nor ``launch.run_dir`` names one."""
    return Path.cwd() / "runs"


def default_run_dir(cfg: RunConfig) -> Path:
    return runs_root() / f"{cfg.name}-{time.strftime('%Y%m%d-%H%M%S')}"


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
    for d in (run.endpoints, run.shards, run.logs()):
        d.mkdir(parents=True, exist_ok=True)
    run.secrets.mkdir(mode=0o700, exist_ok=True)
    os.chmod(run.secrets, 0o700)
    cfg = msgspec.structs.replace(cfg, launch=msgspec.structs.replace(cfg.launch, run_dir=str(run.root)))
    write_atomic(run.config_path, dump_config(cfg).encode())
    ensure_keys(run.root)  # the run token and the control plane's keys
    freeze_code(run.code)
    return run
