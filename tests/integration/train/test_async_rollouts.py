"""AsyncRollouts against real processes: the coordinator with simulated ranks, and a reference server."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import aiohttp
import pytest

from polar_hpc.assets import asset_path
from polar_hpc.reference.options import ReferenceOptions
from polar_hpc.reference.process import start_reference_server
from polar_hpc.train.async_client import AsyncConfig, AsyncRollouts
from polar_hpc.wire.endpoints import Endpoint, endpoint_path, write_endpoint
from polar_hpc.wire.session import Task
from tests.fixtures.waits import async_wait_for
from tests.integration.coordinator.helpers import (
    make_config,
    spawn_coordinator,
    spawn_rank,
    stop,
)
from tests.integration.coordinator.helpers import write_run as write_cp_run


async def test_groups_complete_and_stale_ones_drop(tmp_path: Path) -> None:
    # heartbeat timeout above the client's 5 s result keepalive: the coordinator keeps the subscription
    run_dir = write_cp_run(tmp_path, make_config(tmp_path, heartbeat_timeout_s=30.0))
    coord = spawn_coordinator(run_dir, tmp_path / "coord.log")
    rank = None
    try:
        await async_wait_for(lambda: endpoint_path(run_dir, "coordinator").exists(), 30, "coordinator")
        rank = spawn_rank(run_dir, 0, tmp_path / "rank.log", duration=0.05, capacity=4)
        async with AsyncRollouts(run_dir, AsyncConfig(max_off_policy_steps=0)) as ro:
            tasks = [Task(task_id=f"t{i}", instruction="x") for i in range(3)]
            first = await ro.submit_groups(tasks, rollout_step=0, num_samples=4)
            ro.policy_version = 1  # a weight update happened: step-0 groups are now 1 step off policy
            second = await ro.submit_groups(tasks, rollout_step=1, num_samples=4)
            got = []

            async def consume() -> None:
                async for g in ro.groups(until_idle=True):
                    got.append(g)

            await asyncio.wait_for(consume(), 60)
        assert sorted(g.group_id for g in got) == sorted(second)
        assert all(len(g.results) == 4 and {r.sample_index for r in g.results} == {0, 1, 2, 3} for g in got)
        assert ro.stats.stale == len(first) and ro.stats.yielded == len(second)
        assert first[0] == "t0@step0"
    finally:
        if rank is not None:
            stop(rank)
        stop(coord)


@pytest.mark.slow  # ~12 s: a real weight update on the reference server
async def test_update_policy_reaches_the_reference_server(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt-1"
    shutil.copytree(asset_path("tiny-qwen3"), ckpt)
    run_dir = tmp_path / "run"
    with start_reference_server(asset_path("tiny-qwen3"), ReferenceOptions(seed=0, threads=1),
                                log_path=tmp_path / "ref.log") as ref:
        write_endpoint(run_dir, Endpoint(name="inference-0", url=ref.url, pid=ref.pid, host="127.0.0.1",
                                         started_at=time.time(), kind="reference"))
        ro = AsyncRollouts(run_dir)
        await ro.update_policy(ckpt, 1)
        assert ro.policy_version == 1 and ro.stats.weight_updates == 1
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{ref.url}/get_weight_version") as resp:
                assert (await resp.json())["weight_version"] == "1"
            body = {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 2}, "return_logprob": True}
            async with http.post(f"{ref.url}/generate", json=body) as resp:
                assert (await resp.json())["meta_info"]["weight_version"] == "1"
        with pytest.raises(Exception, match="update_weights_from_disk"):
            await ro.update_policy(tmp_path / "missing", 2)
        assert ro.policy_version == 1


@pytest.mark.slow  # ~20 s: two reference servers, one after the other
async def test_a_push_waits_for_a_server_restarting_under_it(tmp_path: Path) -> None:
    """A weight push that finds a server gone (its job requeued at a time limit; here killed, its endpoint left
    behind) waits for the server's next endpoint and loads the version there; a checkpoint a live server cannot
    load fails at once and leaves ``policy.json`` as it was. Found on 2026-12-06: the push failed the step."""
    from polar_hpc.wire.rundir import PolicyRecord, RunDir

    ckpt = tmp_path / "ckpt-1"
    shutil.copytree(asset_path("tiny-qwen3"), ckpt)
    run_dir = tmp_path / "run"
    opts = ReferenceOptions(seed=0, threads=1)
    with start_reference_server(asset_path("tiny-qwen3"), opts, log_path=tmp_path / "a.log") as gone:
        stale = Endpoint(name="inference-0", url=gone.url, pid=gone.pid, host="127.0.0.1", started_at=time.time(),
                         kind="reference")
        write_endpoint(run_dir, stale)
    ro = AsyncRollouts(run_dir)
    ro.client.restart_wait_s = 120
    push = asyncio.create_task(ro.update_policy(ckpt, 1))
    await asyncio.sleep(1.0)
    assert not push.done() and RunDir(run_dir).policy() == PolicyRecord(path=str(ckpt), version="1")
    with start_reference_server(asset_path("tiny-qwen3"), opts, log_path=tmp_path / "b.log") as back:
        write_endpoint(run_dir, Endpoint(name="inference-0", url=back.url, pid=back.pid, host="127.0.0.1",
                                         started_at=time.time(), kind="reference"))
        await asyncio.wait_for(push, 60)
        async with aiohttp.ClientSession() as http, http.get(f"{back.url}/get_weight_version") as resp:
            assert (await resp.json())["weight_version"] == "1"
        assert ro.policy_version == 1
        t0 = time.monotonic()
        with pytest.raises(Exception, match="update_weights_from_disk"):
            await ro.update_policy(tmp_path / "missing", 2)
        assert time.monotonic() - t0 < 30  # a live server's refusal is not waited out
        assert RunDir(run_dir).policy() == PolicyRecord(path=str(ckpt), version="1") and ro.policy_version == 1
    ro.client.restart_wait_s = 2
    with pytest.raises(TimeoutError, match="inference-0 .* published no new endpoint within 2s"):
        await ro.update_policy(ckpt, 2)
    assert RunDir(run_dir).policy() == PolicyRecord(path=str(ckpt), version="1")
