"""A trainer's result stream ends when the run does, and a finished run says so."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from polar_hpc.coordinator.client import ClientError, RunClient
from polar_hpc.coordinator.server import Coordinator
from polar_hpc.gateway.control import GatewayControl
from polar_hpc.sim.rank import SimulatedRank
from polar_hpc.wire.endpoints import read_endpoint
from polar_hpc.wire.session import Task
from tests.fixtures.waits import async_wait_for
from tests.integration.coordinator.helpers import make_config

pytestmark = pytest.mark.timeout(60)


async def test_results_end_on_shutdown_and_a_finished_run_says_finished(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, n_tasks=3, num_samples=2)
    run_dir = tmp_path / "run"
    coord = Coordinator(cfg, run_dir, host="127.0.0.1", exit_when_done=True,
                        tasks=[Task(task_id=f"t{i}", instruction="x", num_samples=2) for i in range(3)])
    coord_task = asyncio.create_task(coord.run())
    await async_wait_for(lambda: read_endpoint(run_dir, "coordinator") is not None or coord_task.done(), 10, "endpoint")
    sim = SimulatedRank(run_dir, 0, capacity=2, duration_s=0.2, commit_every=1)
    control = GatewayControl(sim, run_dir, rank_id=0, heartbeat_interval_s=0.2, heartbeat_timeout_s=2.0)
    rank_task = asyncio.create_task(control.run())
    async with RunClient(run_dir, timeout_s=5) as client:
        got = [r.key async for r in client.results()]  # must end by itself when the run finishes
        assert sorted(got) == sorted(f"t{i}/{j}" for i in range(3) for j in range(2))
        assert client.shutdown is not None and client.shutdown.reason == "run finished"
        with pytest.raises(ClientError, match="the coordinator shut down: run finished"):
            await client.status()
    assert await asyncio.wait_for(coord_task, 10) == 0
    await asyncio.wait_for(rank_task, 10)
    with pytest.raises(ClientError, match=r"run 'cp-test' finished \(3/3 tasks, 6 sessions committed.*Read the "
                                          r"results from .*shards"):
        await RunClient(run_dir, timeout_s=1).connect()
