"""The run ``train grpo`` launches: the recipe submitted with its tasks withheld (the trainer submits them as GRPO
groups), and the wait until its inference servers and coordinator are up."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def launch_run(cfg: Any, run_dir: str | None) -> Any:
    import msgspec

    from polar_hpc.config import ConfigError
    from polar_hpc.launch.preflight import preflight
    from polar_hpc.launch.rundir import create_run_dir, default_run_dir
    from polar_hpc.launch.submit import submit_run

    run_cfg = msgspec.structs.replace(cfg, tasks=msgspec.structs.replace(cfg.tasks, path=None))
    preflight(run_cfg)
    try:
        run = create_run_dir(run_cfg, Path(run_dir or cfg.launch.run_dir or default_run_dir(cfg)))
    except FileExistsError as err:
        raise ConfigError(str(err)) from None
    submit_run(run.load_config(), run)
    return run


def wait_until_up(run_dir: Path, cfg: Any) -> None:
    from polar_hpc.wire.endpoints import endpoint_path, wait_endpoints

    timeout = cfg.inference.startup_timeout_s
    wait_endpoints(run_dir, [f"inference-{i}" for i in range(cfg.inference.num_servers)], timeout_s=timeout)
    deadline = time.monotonic() + timeout
    while not endpoint_path(run_dir, "coordinator").exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{run_dir}: no coordinator endpoint after {timeout:.0f}s")
        time.sleep(0.5)
