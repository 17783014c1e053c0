"""GatewayRank with a simulated executor: real shard writer, callbacks in order, drain commits."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from pathlib import Path

from polar_hpc.config.run import GatewayConfig, RunConfig, ShardConfig
from polar_hpc.gateway.rank import GatewayRank
from polar_hpc.gateway.stages import Stage
from polar_hpc.sim.executor import SimulatedExecutor
from polar_hpc.store.reader import ShardReader
from polar_hpc.wire.codec import from_json
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.session import Session, Task
from polar_hpc.wire.traces import TraceStatus
from tests.fixtures.waits import async_wait_for


def expand_sessions(tasks: Iterable[Task], done: set[str]) -> Iterator[Session]:
    """Sessions of ``tasks`` (``num_samples`` each), leaving out keys in ``done``."""
    for task in tasks:
        for i in range(task.num_samples):
            s = Session(task=task, sample_index=i)
            if s.key not in done:
                yield s


async def run_local(rank: GatewayRank, sessions: Iterable[Session], stop: asyncio.Event) -> bool:
    """Feed sessions while the rank has free slots (the test's stand-in for the coordinator's dispatch)."""
    for session in sessions:
        while rank.pools.free_slots <= 0 and not stop.is_set():
            await asyncio.sleep(0.2)
        if stop.is_set():
            return False
        await rank.submit(session)
    while rank.in_flight and not stop.is_set():
        await asyncio.sleep(0.2)
    return not stop.is_set()


def config(**gw: float) -> RunConfig:
    return RunConfig(gateway=GatewayConfig(**gw), shards=ShardConfig(max_sessions=4))  # type: ignore[arg-type]


async def test_rank_runs_local_queue_commits_and_reports_in_order(tmp_path: Path) -> None:
    events: list[tuple[str, str]] = []
    rank = GatewayRank(config(), 2, tmp_path, executor=SimulatedExecutor({"run": 0.01}))
    rank.on_done = lambda r: events.append(("done", r.key))
    rank.on_commit = lambda p, keys: events.extend(("commit", k) for k in keys)
    statuses: list[Stage] = []
    rank.on_status = lambda sid, st: statuses.append(st)
    tasks = [Task(task_id=f"t{i}", instruction="x", num_samples=3) for i in range(3)]
    async with rank:
        assert rank.capacity == 2 + 2 + 2
        ok = await asyncio.wait_for(run_local(rank, expand_sessions(tasks, {"t0/1"}), asyncio.Event()), 30)
        assert ok
        await rank.drain(5)
    done = [k for e, k in events if e == "done"]
    assert sorted(done) == sorted(f"t{i}/{j}" for i in range(3) for j in range(3) if (i, j) != (0, 1))
    for key in done:  # a session's commit never precedes its done
        assert events.index(("done", key)) < events.index(("commit", key))
    results = list(ShardReader([tmp_path]).results(None))
    assert sorted(r.key for r in results) == sorted(done)
    assert all(r.gateway_rank == 2 and r.trajectory.status is TraceStatus.COMPLETED for r in results)
    assert Stage.DONE in statuses and Stage.RUN in statuses


async def test_rank_drain_releases_a_cut_session_and_sets_its_attempt_aside(tmp_path: Path) -> None:
    results: list[SessionResult] = []
    statuses: list[tuple[str, Stage]] = []
    rank = GatewayRank(config(agent_timeout_s=600), 0, tmp_path, executor=SimulatedExecutor({"run": 300}))
    rank.on_done = results.append
    rank.on_status = lambda sid, st: statuses.append((sid, st))
    async with rank:
        await rank.submit(next(expand_sessions([Task(task_id="slow", instruction="x")], set())))
        await async_wait_for(lambda: rank.occupancy()["run"] > 0, 30, "the session to reach RUN")
        await asyncio.wait_for(rank.drain(0.4), 10)
    assert results == [] and statuses[-1] == ("slow/0#0", Stage.RELEASED)
    assert list(ShardReader([tmp_path]).results(None)) == []
    (aside,) = RunDir(tmp_path).released(0).glob("*.json")
    kept = from_json(aside.read_bytes(), SessionResult)
    assert kept.key == "slow/0" and kept.attempt == 0 and kept.gateway_rank == 0
    assert kept.released.host and "drain" in kept.released.reason
