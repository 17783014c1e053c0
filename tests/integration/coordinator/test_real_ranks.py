"""Loopback run with real components: a coordinator and two `polar-hpc gateway` ranks (bwrap sandboxes, the
`shell` harness running the mini agent) against the reference server; every session lands exactly once."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from polar_hpc.config import dump_config, load_recipe
from polar_hpc.wire.endpoints import endpoint_path
from polar_hpc.wire.rundir import RunDir
from tests.fixtures.gateway_runs import REPO, make_recipe, server_url
from tests.fixtures.waits import wait_for
from tests.integration.coordinator.helpers import _env, shard_keys, stop

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_coordinator_with_two_gateway_ranks(tmp_path: Path, reference_server: Any, tiny_qwen3_dir: Path,
                                            no_leaked_children: None) -> None:
    if shutil.which("bwrap") is None:
        pytest.fail("bwrap is not installed (apt-get install bubblewrap); gateway ranks need it")
    samples = 2
    recipe = make_recipe(tmp_path, "shell", server_url(reference_server), tiny_qwen3_dir, samples=samples)
    cfg = load_recipe(recipe)
    cfg.coordinator.heartbeat_interval_s = 0.5
    cfg.coordinator.heartbeat_timeout_s = 20.0
    cfg.coordinator.status_interval_s = 1.0
    config = tmp_path / "resolved.toml"
    config.write_text(dump_config(cfg))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    logs = tmp_path / "logs"
    logs.mkdir()
    base = [sys.executable, "-m", "polar_hpc"]
    procs = [subprocess.Popen([*base, "coordinator", "--config", str(config), "--run-dir", str(run_dir),
                               "--host", "127.0.0.1"], stdout=(logs / "coordinator.log").open("wb"),
                              stderr=subprocess.STDOUT, cwd=REPO, env=_env())]
    try:
        wait_for(lambda: endpoint_path(run_dir, "coordinator").exists(), 30, "coordinator endpoint")
        for rank in range(2):
            procs.append(subprocess.Popen([*base, "gateway", "--config", str(config), "--run-dir", str(run_dir),
                                           "--rank", str(rank)], stdout=(logs / f"rank{rank}.log").open("wb"),
                                          stderr=subprocess.STDOUT, cwd=REPO, env=_env()))
        try:
            procs[0].wait(480)
        except subprocess.TimeoutExpired:
            pytest.fail(f"run did not finish; status.json: {RunDir(run_dir).status_path.read_text()}; logs {logs}")
        assert procs[0].returncode == 0, (logs / "coordinator.log").read_text()[-3000:]
        for p in procs[1:]:
            p.wait(120)
            assert p.returncode == 0, f"gateway rank exited {p.returncode}; logs in {logs}"
    finally:
        for p in procs:
            stop(p, timeout_s=30)
    keys, dups = shard_keys(run_dir)
    assert sorted(keys) == [f"calc-add/{i}" for i in range(samples)] and dups == 0
    status = RunDir(run_dir).read_status()
    assert status is not None and status.finished and status.sessions["committed"] == samples
    assert status.started <= status.updated <= time.time()  # both wall clock (eval --from reads the difference)
    ranks = {r.rank for r in status.ranks}
    assert ranks == {0, 1}
