"""Starting a run: preflight, the run dir, the jobs. What ``polar-hpc launch`` does, callable from Python (``eval``)."""

from __future__ import annotations

from pathlib import Path

from polar_hpc.config import ConfigError, RunConfig
from polar_hpc.launch.preflight import preflight
from polar_hpc.launch.rundir import create_run_dir, default_run_dir
from polar_hpc.launch.submit import submit_run
from polar_hpc.wire.rundir import JobsFile, RunDir


def new_run(cfg: RunConfig, run_dir: str | Path | None = None) -> RunDir:
    """Check ``cfg`` (``ConfigError`` listing every problem) and make its run dir (``run_dir``, else
    ``launch.run_dir``, else ``runs/<name>-<time>``); nothing is submitted."""
    preflight(cfg)
    try:
        return create_run_dir(cfg, Path(run_dir or cfg.launch.run_dir or default_run_dir(cfg)))
    except FileExistsError as err:
        raise ConfigError(str(err)) from None


def start_run(cfg: RunConfig, run_dir: str | Path | None = None) -> tuple[RunDir, JobsFile]:
    """:func:`new_run`, then submit every component; the run dir and the ledger of its jobs."""
    run = new_run(cfg, run_dir)
    return run, submit_run(run.load_config(), run)
