"""The coordinator in this process, real ZeroMQ sockets over loopback, simulated gateway ranks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import msgspec
import pytest
import zmq
import zmq.asyncio

from polar_hpc.coordinator.client import ClientError, RunClient
from polar_hpc.coordinator.server import Coordinator
from polar_hpc.gateway.control import GatewayControl
from polar_hpc.sim.rank import SimulatedRank
from polar_hpc.wire import control as c
from polar_hpc.wire.endpoints import read_endpoint
from polar_hpc.wire.security import configure_client, load_keys
from polar_hpc.wire.session import Task
from tests.fixtures.waits import async_wait_for
from tests.integration.coordinator.helpers import make_config, shard_keys, term_with_deadline

pytestmark = pytest.mark.timeout(60)

StartCoord = Callable[..., "asyncio.Future[Coordinator]"]


@pytest.fixture
async def start_coordinator(tmp_path: Path) -> AsyncIterator[Callable[..., object]]:
    started: list[tuple[Coordinator, asyncio.Task[int]]] = []

    async def start(**kw: object) -> Coordinator:
        max_frame = kw.pop("max_frame_bytes", 1 << 20)
        cfg = make_config(tmp_path, **kw)  # type: ignore[arg-type]
        coord = Coordinator(cfg, tmp_path / "run", host="127.0.0.1", max_frame_bytes=max_frame)  # type: ignore[arg-type]
        task = asyncio.create_task(coord.run())
        started.append((coord, task))
        await async_wait_for(lambda: read_endpoint(tmp_path / "run", "coordinator") is not None or task.done(), 10,
                             "endpoint")
        return coord

    yield start
    for coord, task in started:
        coord.stop()
        await asyncio.wait_for(task, 10)


async def _rank(run_dir: Path, rank: int, **kw: object) -> tuple[GatewayControl, asyncio.Task[str]]:
    sim = SimulatedRank(run_dir, rank, **kw)  # type: ignore[arg-type]
    control = GatewayControl(sim, run_dir, rank_id=rank, heartbeat_interval_s=0.2, heartbeat_timeout_s=2.0)
    return control, asyncio.create_task(control.run())


async def test_submit_stream_commit_status(start_coordinator: Callable[..., object], tmp_path: Path) -> None:
    coord: Coordinator = await start_coordinator()  # type: ignore[misc]
    run_dir = tmp_path / "run"
    control, rank_task = await _rank(run_dir, 0, capacity=3, duration_s=0.01, commit_every=2)
    async with RunClient(run_dir, timeout_s=5) as client:
        reply = await client.submit([Task(task_id=f"t{i}", instruction="x", num_samples=2) for i in range(3)])
        assert reply.accepted == ["t0", "t1", "t2"] and not reply.rejected
        again = await client.submit([Task(task_id="t0", instruction="x")])
        assert "already submitted" in again.rejected["t0"]
        got: set[str] = set()
        async for result in client.results():
            got.add(result.key)
            if len(got) == 6:
                break
        assert got == {f"t{i}/{j}" for i in range(3) for j in range(2)}
        await async_wait_for(lambda: coord.state.finished, 10, "all sessions committed")
        status = await client.status()
        assert status.sessions["committed"] == 6 and status.ranks_alive == 1
        assert not status.finished  # a serving coordinator (no task file) never finishes
        ts = await client.task_status("t1", with_results=True)
        assert ts.state == "completed" and len(ts.results) == 2
        assert not (await client.task_status("nope")).found
    control.request_drain("test over")
    assert await asyncio.wait_for(rank_task, 10) == "drained"
    keys, dups = shard_keys(run_dir)
    assert sorted(keys) == sorted(got) and dups == 0


async def test_client_without_run_keys_is_refused(start_coordinator: Callable[..., object], tmp_path: Path) -> None:
    await start_coordinator()
    run_dir = tmp_path / "run"
    ep = read_endpoint(run_dir, "coordinator")
    assert ep is not None
    keys = load_keys(run_dir)
    ctx = zmq.asyncio.Context()
    hello = c.encode(c.Hello(protocol=c.PROTOCOL_VERSION, role="client"))
    intruder = ctx.socket(zmq.DEALER)
    plain = ctx.socket(zmq.DEALER)
    try:
        pub, sec = zmq.curve_keypair()  # knows the server key, not the run's client key
        intruder.curve_serverkey = keys.server_public.encode()
        intruder.curve_publickey, intruder.curve_secretkey = pub, sec
        for sock in (intruder, plain):
            sock.connect(ep.url)
            await sock.send(hello)
        peers = (("wrong key", intruder), ("no CURVE", plain))
        answered = await asyncio.gather(*(sock.poll(1500) for _, sock in peers))  # both waits at once
        for (name, sock), got in zip(peers, answered, strict=True):
            assert got == 0, f"a peer with {name} got an answer: {await sock.recv()!r}"
    finally:
        intruder.close(linger=0)
        plain.close(linger=0)
        term_with_deadline(ctx)
    async with RunClient(run_dir, timeout_s=5) as client:
        assert (await client.status()).run_name == "cp-test"


async def test_bad_frames_are_dropped_and_serving_continues(
        start_coordinator: Callable[..., object], tmp_path: Path) -> None:
    coord: Coordinator = await start_coordinator(max_frame_bytes=4096)  # type: ignore[misc]
    run_dir = tmp_path / "run"
    ep = read_endpoint(run_dir, "coordinator")
    assert ep is not None
    ctx = zmq.asyncio.Context()
    big = ctx.socket(zmq.DEALER)
    sock = ctx.socket(zmq.DEALER)
    try:
        # an oversized frame is refused by zmq itself (maxmsgsize: it drops that connection), never received
        configure_client(big, load_keys(run_dir))
        big.connect(ep.url)
        await big.send(b"\x00" * 10_000)
        await asyncio.sleep(0.5)
        assert coord.dropped_frames == 0
        configure_client(sock, load_keys(run_dir))
        sock.connect(ep.url)
        await sock.send(b"\xc1garbage")
        await sock.send(msgspec.msgpack.encode({"type": "NoSuchMessage", "x": 1}))
        await sock.send_multipart([b"two", b"frames"])
        await sock.send(c.encode(c.Hello(protocol=999, role="client")))
        assert await sock.poll(5000)
        refused = c.client_decoder().decode(await sock.recv())
        assert isinstance(refused, c.Refused) and "version 999" in refused.reason
    finally:
        big.close(linger=0)
        sock.close(linger=0)
        term_with_deadline(ctx)
    async with RunClient(run_dir, timeout_s=5) as client:
        await client.status()
    assert coord.dropped_frames == 3


async def test_slow_subscriber_is_bounded_and_catches_up_from_shards(
        start_coordinator: Callable[..., object], tmp_path: Path) -> None:
    coord: Coordinator = await start_coordinator(result_buffer=3)  # type: ignore[misc]
    run_dir = tmp_path / "run"
    control, rank_task = await _rank(run_dir, 0, capacity=4, duration_s=0.0, commit_every=1)
    async with RunClient(run_dir, timeout_s=5, credits=2) as client:
        stream = client.results()
        first_task = asyncio.ensure_future(anext(stream))  # subscribes with 2 credits
        await async_wait_for(lambda: len(coord.subs) == 1, 5, "subscription")
        await client.submit([Task(task_id="slow", instruction="x", num_samples=20)])
        first = await asyncio.wait_for(first_task, 5)
        await async_wait_for(lambda: coord.state.finished, 10, "all committed")
        for sub in coord.subs.subs.values():
            assert len(sub.buffer) <= 3 and sub.dropped > 0
        got = {first.key}
        async for r in stream:
            got.add(r.key)
            if len(got) == 20:
                break
        await stream.aclose()
        assert client.lagged > 0
        assert got == {f"slow/{i}" for i in range(20)}
    control.request_drain()
    await asyncio.wait_for(rank_task, 10)


async def test_missing_endpoint_and_keys_give_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ClientError, match="no coordinator endpoint"):
        await RunClient(tmp_path).connect()
