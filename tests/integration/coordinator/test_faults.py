"""Real processes: a coordinator and simulated gateway ranks; kill things and check exactly-once shards."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from polar_hpc.wire.endpoints import endpoint_path
from polar_hpc.wire.rundir import RunDir
from tests.fixtures.waits import wait_for
from tests.integration.coordinator.helpers import (
    make_config,
    shard_keys,
    spawn_coordinator,
    spawn_rank,
    stop,
    write_run,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

N_TASKS, SAMPLES = 8, 2
EXPECTED = sorted(f"t{i:03d}/{j}" for i in range(N_TASKS) for j in range(SAMPLES))


def _status(run_dir: Path) -> dict[str, int]:
    status = RunDir(run_dir).read_status()
    return status.sessions if status is not None else {}


class Run:
    def __init__(self, tmp_path: Path) -> None:
        self.run_dir = write_run(tmp_path, make_config(tmp_path, n_tasks=N_TASKS, num_samples=SAMPLES))
        self.logs = tmp_path / "logs"
        self.logs.mkdir()
        self.procs: list[subprocess.Popen[bytes]] = []

    def coordinator(self) -> subprocess.Popen[bytes]:
        p = spawn_coordinator(self.run_dir, self.logs / "coordinator.log")
        self.procs.append(p)
        wait_for(lambda: endpoint_path(self.run_dir, "coordinator").exists(), 20, "coordinator endpoint")
        return p

    def rank(self, rank: int, **kw: object) -> subprocess.Popen[bytes]:
        p = spawn_rank(self.run_dir, rank, self.logs / f"rank{rank}.log", **kw)  # type: ignore[arg-type]
        self.procs.append(p)
        return p

    def finish(self, coord: subprocess.Popen[bytes]) -> None:
        try:
            coord.wait(90)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"coordinator did not finish; status {_status(self.run_dir)}; "
                                 f"logs in {self.logs}") from None
        assert coord.returncode == 0
        for p in self.procs:
            stop(p, timeout_s=15)

    def check_exactly_once(self) -> None:
        keys, dups = shard_keys(self.run_dir)
        assert sorted(set(keys)) == EXPECTED, f"missing: {sorted(set(EXPECTED) - set(keys))}"
        assert len(keys) == len(set(keys)) and dups == 0, f"duplicated in shards: {len(keys) - len(set(keys))}"
        status = RunDir(self.run_dir).read_status()
        assert status is not None and status.finished and status.sessions["committed"] == len(EXPECTED)

    def cleanup(self) -> None:
        for p in self.procs:
            stop(p, signal.SIGKILL, timeout_s=5)


@pytest.fixture
def run(tmp_path: Path):  # type: ignore[no-untyped-def]
    r = Run(tmp_path)
    yield r
    r.cleanup()


def test_loopback_two_ranks_complete(run: Run) -> None:
    coord = run.coordinator()
    run.rank(0)
    run.rank(1)
    run.finish(coord)
    run.check_exactly_once()


def test_sigkill_rank_mid_session(run: Run) -> None:
    coord = run.coordinator()
    victim = run.rank(0, duration=3.0, capacity=2)
    wait_for(lambda: _status(run.run_dir).get("running", 0) >= 2, 20, "rank 0 running sessions")
    stop(victim, signal.SIGKILL)
    run.rank(1, duration=0.05)
    run.finish(coord)
    run.check_exactly_once()


def test_sigkill_coordinator_and_restart(run: Run) -> None:
    coord = run.coordinator()
    run.rank(0, duration=0.3)
    run.rank(1, duration=0.3)
    wait_for(lambda: _status(run.run_dir).get("committed", 0) >= 3, 30, "some commits")
    stop(coord, signal.SIGKILL)
    coord = run.coordinator()
    run.finish(coord)
    run.check_exactly_once()


def test_sigterm_rank_drains_and_commits(run: Run) -> None:
    coord = run.coordinator()
    preempted = run.rank(0, duration=0.5, capacity=2, commit_every=100)
    wait_for(lambda: _status(run.run_dir).get("done", 0) >= 1, 30, "rank 0 finished a session")
    assert stop(preempted, signal.SIGTERM, timeout_s=20) == 0
    run.rank(1, duration=0.05)
    run.finish(coord)
    run.check_exactly_once()


def test_a_result_stream_follows_a_requeued_coordinator(run: Run) -> None:
    """A job stops its coordinator with SIGTERM for a time limit or a preemption (no cancel marker) and the requeued
    job starts the next one: a subscribed client (a trainer's) follows it and streams every session once. Found on
    2026-12-06: a GRPO run's stream ended at the local backend's 60-minute limit and the trainer stopped."""
    import asyncio
    import threading

    from polar_hpc.coordinator.client import RunClient

    coord = run.coordinator()
    run.rank(0, duration=0.3)
    got: list[str] = []
    errors: list[BaseException] = []
    done = threading.Event()

    async def follow() -> None:
        async with RunClient(run.run_dir, restart_wait_s=60) as client:
            async for r in client.results():
                got.append(r.key)

    def body() -> None:
        try:
            asyncio.run(follow())
        except BaseException as err:  # noqa: BLE001  # reported by the assertions below
            errors.append(err)
        done.set()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    wait_for(lambda: len(got) >= 3, 30, "some results streamed")
    stop(coord)
    assert not done.wait(2), f"the stream ended with the stopped coordinator ({errors})"
    coord = run.coordinator()
    run.finish(coord)
    assert done.wait(30), "the stream did not end when the run finished"
    assert not errors, errors
    assert len(got) == len(set(got)) and sorted(got) == EXPECTED, f"missing {sorted(set(EXPECTED) - set(got))}"
    run.check_exactly_once()


def test_a_result_stream_ends_on_a_finished_status_the_coordinator_never_sent(run: Run) -> None:
    """A coordinator that ends the run before a client's subscription reaches it (a requeued one finishing fast)
    tells that client nothing: the stream ends once ``status.json`` says the run finished, after reading the shards.
    Here the coordinator is killed (no Shutdown sent) and the finished status written for it."""
    import asyncio
    import time

    from polar_hpc.coordinator.client import RunClient
    from polar_hpc.wire.control import RunStatus

    coord = run.coordinator()
    run.rank(0, duration=0.3)
    got: list[str] = []

    async def follow() -> None:
        async with RunClient(run.run_dir, restart_wait_s=60) as client:
            async for r in client.results(keepalive_s=1.0):
                got.append(r.key)
                if len(got) == 3:
                    stop(coord, signal.SIGKILL)
                    RunDir(run.run_dir).write_status(RunStatus(started=time.time(), updated=time.time(),
                                                               finished=True))

    asyncio.run(asyncio.wait_for(follow(), 30))
    keys, _ = shard_keys(run.run_dir)
    assert len(got) == len(set(got)) and set(keys) <= set(got), f"not streamed: {sorted(set(keys) - set(got))}"
