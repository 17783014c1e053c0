"""Sessions that end without a result, lost commits and dropped subscriptions: the coordinator in this process,
real ZeroMQ sockets over loopback, simulated gateway ranks (real shard writer)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import zmq
import zmq.asyncio

from polar_hpc.coordinator.client import RunClient
from polar_hpc.coordinator.journal import Cancelled, Journal, Submitted
from polar_hpc.coordinator.server import Coordinator
from polar_hpc.gateway.control import GatewayControl
from polar_hpc.sim.rank import SimulatedRank
from polar_hpc.wire import control as c
from polar_hpc.wire.control import SessionState
from polar_hpc.wire.endpoints import read_endpoint
from polar_hpc.wire.security import configure_client, load_keys
from polar_hpc.wire.session import Task
from tests.fixtures.waits import async_wait_for
from tests.integration.coordinator.helpers import make_config, shard_keys, term_with_deadline

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def coordinator(tmp_path: Path) -> AsyncIterator[Callable[..., object]]:
    started: list[tuple[Coordinator, asyncio.Task[int]]] = []

    async def start(**kw: object) -> Coordinator:
        coord = Coordinator(make_config(tmp_path, **kw), tmp_path / "run", host="127.0.0.1")  # type: ignore[arg-type]
        task = asyncio.create_task(coord.run())
        started.append((coord, task))
        await async_wait_for(lambda: read_endpoint(tmp_path / "run", "coordinator") is not None or task.done(), 10,
                             "endpoint")
        return coord

    yield start
    for coord, task in started:
        coord.stop()
        await asyncio.wait_for(task, 10)


def _rank(run_dir: Path, rank: int, **kw: object) -> tuple[GatewayControl, asyncio.Task[str]]:
    sim = SimulatedRank(run_dir, rank, **kw)  # type: ignore[arg-type]
    control = GatewayControl(sim, run_dir, rank_id=rank, heartbeat_interval_s=0.2, heartbeat_timeout_s=2.0)
    return control, asyncio.create_task(control.run())


def _states(coord: Coordinator, task_id: str) -> list[SessionState]:
    return [coord.state.sessions[k].state for k in coord.state.tasks[task_id].keys]


async def test_cancelled_running_session_ends_cancelled_and_frees_its_slot(
        coordinator: Callable[..., object], tmp_path: Path) -> None:
    coord: Coordinator = await coordinator()  # type: ignore[misc]
    run_dir = tmp_path / "run"
    control, rank_task = _rank(run_dir, 0, capacity=1, duration_s=60.0, drain_grace_s=0.1)
    async with RunClient(run_dir, timeout_s=5) as client:
        await client.submit([Task(task_id="slow", instruction="x")])
        await async_wait_for(lambda: _states(coord, "slow") == [SessionState.RUNNING], 10, "session running")
        reply = await client.cancel("slow")
        assert reply.running == 1
        await async_wait_for(lambda: _states(coord, "slow") == [SessionState.CANCELLED], 10, "session cancelled")
        assert coord.state.ranks[0].free == 1 and coord.state.finished
        assert (await client.task_status("slow")).state == "cancelled"
        # the freed slot takes new work
        await client.submit([Task(task_id="next", instruction="x")])
        await async_wait_for(lambda: _states(coord, "next") == [SessionState.RUNNING], 10, "next running")
    assert not control.active or list(control.active) == ["next/0"]
    control.request_drain("test over")
    await asyncio.wait_for(rank_task, 10)


async def test_drain_requeues_cut_sessions_without_counting_a_failure(
        coordinator: Callable[..., object], tmp_path: Path) -> None:
    coord: Coordinator = await coordinator(max_attempts=1)  # type: ignore[misc]
    run_dir = tmp_path / "run"
    control, rank_task = _rank(run_dir, 0, capacity=2, duration_s=60.0, drain_grace_s=0.1)
    async with RunClient(run_dir, timeout_s=5) as client:
        await client.submit([Task(task_id="t", instruction="x", num_samples=2)])
        await async_wait_for(lambda: len(control.active) == 2, 10, "running on the rank")
        control.request_drain("preempted")
        assert await asyncio.wait_for(rank_task, 10) == "drained"
        await asyncio.sleep(2.5)  # past the heartbeat timeout: the silent rank is declared dead
        entries = [coord.state.sessions[k] for k in coord.state.tasks["t"].keys]
        assert [(s.state, s.failures, s.attempt) for s in entries] == [(SessionState.PENDING, 0, 1)] * 2
        # a fresh rank runs them to the end
        control2, rank2 = _rank(run_dir, 1, capacity=2, duration_s=0.01, commit_every=1)
        await async_wait_for(lambda: coord.state.finished, 15, "task finished")
        assert _states(coord, "t") == [SessionState.COMMITTED] * 2
        control2.request_drain("test over")
        await asyncio.wait_for(rank2, 10)
    keys, dups = shard_keys(run_dir)
    assert sorted(keys) == ["t/0", "t/1"] and dups == 0


async def test_a_lost_committed_is_recovered_from_the_next_hello(
        coordinator: Callable[..., object], tmp_path: Path) -> None:
    coord: Coordinator = await coordinator()  # type: ignore[misc]
    run_dir = tmp_path / "run"
    async with RunClient(run_dir, timeout_s=5) as client:
        await client.submit([Task(task_id="t", instruction="x")])
    ep = read_endpoint(run_dir, "coordinator")
    assert ep is not None and ep.protocol == c.PROTOCOL_VERSION
    assert read_endpoint(run_dir, "coordinator").url == ep.url  # the trainer's loop reads it this way
    ctx = zmq.asyncio.Context()
    dec = c.gateway_decoder()

    async def recv_until(sock: zmq.asyncio.Socket, kind: type) -> object:
        while True:
            assert await sock.poll(5000), f"no {kind.__name__}"
            msg = dec.decode(await sock.recv())
            if isinstance(msg, kind):
                return msg

    try:
        first = ctx.socket(zmq.DEALER)
        configure_client(first, load_keys(run_dir))
        first.connect(ep.url)
        await first.send(c.encode(c.Hello(protocol=c.PROTOCOL_VERSION, role="gateway", rank=0, capacity=1)))
        dispatch = await recv_until(first, c.Dispatch)
        assert [s.key for s in dispatch.sessions] == ["t/0"]  # type: ignore[attr-defined]
        # the rank ran it and published a shard; SessionDone and Committed died with this connection
        first.close(linger=0)
        second = ctx.socket(zmq.DEALER)
        configure_client(second, load_keys(run_dir))
        second.connect(ep.url)
        await second.send(c.encode(c.Hello(protocol=c.PROTOCOL_VERSION, role="gateway", rank=0, capacity=1,
                                           committed=[c.ShardRef("shards/rank-00000-000000.h5", ["t/0"])])))
        ack = await recv_until(second, c.CommitAck)
        assert ack.path == "shards/rank-00000-000000.h5"  # type: ignore[attr-defined]
        assert _states(coord, "t") == [SessionState.COMMITTED] and coord.state.finished
        await asyncio.sleep(0.5)
        assert not await second.poll(100) or not isinstance(dec.decode(await second.recv()), c.Dispatch)
        second.close(linger=0)
    finally:
        term_with_deadline(ctx)


async def test_gateway_keeps_published_shards_until_acknowledged_and_hops_threads(tmp_path: Path) -> None:
    sim = SimulatedRank(tmp_path, 0, write_shards=False)
    control = GatewayControl(sim, tmp_path, rank_id=0)
    control._loop = asyncio.get_running_loop()
    control._thread = threading.get_ident()
    control.uncommitted["t/0"] = 0
    # on_commit fires in the shard writer's thread: it must not touch the state there
    t = threading.Thread(target=sim._committed, args=(tmp_path / "s.h5", ["t/0"]))
    t.start()
    t.join(5)
    assert control.uncommitted == {"t/0": 0} and not control.unacked
    await asyncio.sleep(0.05)
    assert not control.uncommitted and control.unacked == {str(tmp_path / "s.h5"): ["t/0"]}
    hello = control._hello()
    assert [(s.path, s.keys) for s in hello.committed] == [(str(tmp_path / "s.h5"), ["t/0"])]
    await control._handle(None, c.CommitAck(path=str(tmp_path / "s.h5")))  # type: ignore[arg-type]
    assert not control._hello().committed


async def test_result_stream_survives_a_long_pause_and_a_forgotten_subscription(
        coordinator: Callable[..., object], tmp_path: Path) -> None:
    coord: Coordinator = await coordinator()  # type: ignore[misc]  # heartbeat timeout 2 s
    run_dir = tmp_path / "run"
    control, rank_task = _rank(run_dir, 0, capacity=2, duration_s=0.01, commit_every=1)
    async with RunClient(run_dir, timeout_s=5) as client:
        stream = client.results(keepalive_s=0.3)
        await client.submit([Task(task_id="a", instruction="x")])
        assert (await asyncio.wait_for(stream.__anext__(), 10)).key == "a/0"
        await asyncio.sleep(3.0)  # a training step longer than the coordinator's heartbeat timeout
        assert len(coord.subs) == 1
        await client.submit([Task(task_id="b", instruction="x")])
        assert (await asyncio.wait_for(stream.__anext__(), 10)).key == "b/0"
        coord.subs.subs.clear()  # as after a restart: the coordinator no longer knows this subscriber
        await async_wait_for(lambda: len(coord.subs) == 1, 5, "subscribed again")
        await client.submit([Task(task_id="c", instruction="x")])
        assert (await asyncio.wait_for(stream.__anext__(), 10)).key == "c/0"
        await stream.aclose()
    control.request_drain("test over")
    await asyncio.wait_for(rank_task, 10)


async def test_no_callback_for_tasks_complete_before_a_restart(tmp_path: Path) -> None:
    from polar_hpc.coordinator.http import HttpFacade

    run_dir = tmp_path / "run"
    journal = Journal(run_dir)
    task = Task(task_id="old", instruction="x", metadata={"callback_url": "http://127.0.0.1:9/cb"})
    journal.append([Submitted(task=task), Cancelled(task_id="old")])
    journal.close()
    coord = Coordinator(make_config(tmp_path), run_dir, host="127.0.0.1")
    coord.restore()
    facade = HttpFacade(coord, "token")
    coord._notify_tasks()
    assert coord.state.tasks["old"].restored_complete and not facade.callbacks
    coord.journal.close()
