"""The coordinator's receive loop reads what is already queued in batches (``server.RECV_BATCH``): a burst longer
than several batches is handled whole, in order, and a message whose handling fails loses none after it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import zmq
import zmq.asyncio

from polar_hpc.coordinator import server
from polar_hpc.coordinator.server import Coordinator
from polar_hpc.wire import control as c
from polar_hpc.wire.endpoints import read_endpoint
from polar_hpc.wire.security import configure_client, load_keys
from tests.fixtures.waits import async_wait_for
from tests.integration.coordinator.helpers import make_config, term_with_deadline

pytestmark = pytest.mark.timeout(60)


async def test_a_burst_past_several_batches_is_handled_whole_and_in_order(tmp_path: Path) -> None:
    coord = Coordinator(make_config(tmp_path), tmp_path / "run", host="127.0.0.1")
    seen: list[int] = []
    handle = coord._handle

    def counting(frames: list[bytes]) -> None:
        msg = c.coordinator_decoder().decode(frames[1])
        if isinstance(msg, c.GetRunStatus):
            seen.append(msg.req)
            if msg.req % 100 == 7:
                raise RuntimeError("a handler that fails")  # logged and dropped; the batch goes on
        handle(frames)

    coord._handle = counting  # type: ignore[method-assign]
    task = asyncio.create_task(coord.run())
    run_dir = tmp_path / "run"
    await async_wait_for(lambda: read_endpoint(run_dir, "coordinator") is not None or task.done(), 10, "endpoint")
    ep = read_endpoint(run_dir, "coordinator")
    assert ep is not None
    ctx = zmq.asyncio.Context()
    sock = ctx.socket(zmq.DEALER)
    n = 3 * server.RECV_BATCH + 17
    try:
        configure_client(sock, load_keys(run_dir))
        sock.connect(ep.url)
        await sock.send(c.encode(c.Hello(protocol=c.PROTOCOL_VERSION, role="client")))
        for i in range(n):
            await sock.send(c.encode(c.GetRunStatus(req=i)))
        replies: list[int] = []
        dec = c.client_decoder()
        while len(replies) < n - n // 100 - (n % 100 > 7):
            assert await sock.poll(10_000), f"{len(replies)} replies of {n}"
            msg = dec.decode(await sock.recv())
            if isinstance(msg, c.RunStatus):
                replies.append(msg.req)
    finally:
        sock.close(linger=0)
        term_with_deadline(ctx)
        coord.stop()
        await asyncio.wait_for(task, 10)
    assert seen == list(range(n))
    assert replies == [i for i in range(n) if i % 100 != 7]
