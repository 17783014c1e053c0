"""A group whose task ends with samples that never send a result (ERROR, CANCELLED) still closes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from polar_hpc.coordinator.server import Coordinator
from polar_hpc.gateway.control import GatewayControl
from polar_hpc.sim.rank import SimulatedRank
from polar_hpc.train.async_client import AsyncConfig, AsyncRollouts
from polar_hpc.wire.endpoints import read_endpoint
from polar_hpc.wire.session import Task
from tests.fixtures.waits import async_wait_for
from tests.integration.coordinator.helpers import make_config

pytestmark = pytest.mark.timeout(60)


async def test_group_with_an_errored_sample_closes_until_idle(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    coord = Coordinator(make_config(tmp_path), run_dir, host="127.0.0.1")
    coord_task = asyncio.create_task(coord.run())
    rank_task = None
    try:
        await async_wait_for(lambda: read_endpoint(run_dir, "coordinator") is not None, 10, "endpoint")
        async with AsyncRollouts(run_dir, AsyncConfig(min_group_fraction=0.5)) as ro:
            (gid,) = await ro.submit_groups([Task(task_id="t", instruction="x")], rollout_step=0, num_samples=2)
            coord.state.give_up(f"{gid}/0", "gave up")  # as after max_attempts rank deaths: no result, ever
            control = GatewayControl(SimulatedRank(run_dir, 0, capacity=2, duration_s=0.01, commit_every=1),
                                     run_dir, rank_id=0, heartbeat_interval_s=0.2, heartbeat_timeout_s=2.0)
            rank_task = asyncio.create_task(control.run())
            got = []

            async def consume() -> None:
                async for g in ro.groups(until_idle=True, check_s=0.3):
                    got.append(g)

            await asyncio.wait_for(consume(), 20)
        assert [g.group_id for g in got] == [gid]
        assert got[0].failed == 1 and [r.sample_index for r in got[0].results] == [1]
        assert got[0].completed_fraction == 0.5 and ro.pending == 0
        control.request_drain("test over")
        await asyncio.wait_for(rank_task, 10)
    finally:
        coord.stop()
        await asyncio.wait_for(coord_task, 10)
