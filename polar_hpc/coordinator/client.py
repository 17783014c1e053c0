"""Python client of a running polar-hpc run: submit tasks, stream results, read status, cancel.

    async with RunClient(run_dir) as client:
        await client.submit([Task(task_id="t1", instruction="...", num_samples=4)])
        async for result in client.results():
            ...

Results stream with credit-based flow control. If this client falls more than the coordinator's buffer behind,
the coordinator drops the oldest buffered results and says so; ``results()`` then reads the committed shards and
yields the results it has not seen yet (``catch_up=True``), so a slow trainer loses nothing that was committed.

While ``results()`` is open a background task keeps the subscription alive (an empty ``Credit`` every
``keepalive_s``), also while the caller is busy between two results (a long training step). If the coordinator
forgot the subscription anyway (it restarted, or the loop was blocked past its heartbeat timeout) it answers with
an error and the stream subscribes again; results published in between are not streamed again, but with
``catch_up=True`` the committed ones are read from the shards. A coordinator that stops without the run ending (its
job requeued for a time limit or a preemption: ``Shutdown.final`` False) is followed: the client waits up to
``restart_wait_s`` for the next one's endpoint, connects to it and subscribes again (requests wait meanwhile).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from collections.abc import AsyncGenerator, Iterable
from pathlib import Path
from typing import Any

import msgspec
import zmq
import zmq.asyncio

from polar_hpc.errors import PolarError
from polar_hpc.log import get_logger
from polar_hpc.wire import control as c
from polar_hpc.wire.endpoints import Endpoint, read_endpoint
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.rundir import RunDir, component_name
from polar_hpc.wire.security import configure_client, load_keys
from polar_hpc.wire.session import Task

log = get_logger("client")

RESTART_WAIT_S = 600.0
"""How long a client waits for the next coordinator after one stopped without the run ending (a requeue)."""


class ClientError(PolarError, RuntimeError):
    exit_code = 1


class RunClient:
    """A client of a running run's coordinator (ZeroMQ, CURVE keys from the run dir).

    Example::

        async with RunClient("runs/demo") as client:
            await client.submit([Task(task_id="t1", instruction="fix the failing test", num_samples=4)])
            async for result in client.results():       # ends when the coordinator shuts down
                print(result.key, result.reward)
            print((await client.status()).sessions)

    ``connect`` raises ``ClientError`` saying why: no endpoint yet, the run already finished (its results are in
    the shards), the coordinator refused the keys, or no answer in ``timeout_s``. Requests after the coordinator
    shut down raise ``ClientError`` too.
    """

    def __init__(self, run_dir: str | Path, *, timeout_s: float = 30.0, credits: int = 64,
                 restart_wait_s: float = RESTART_WAIT_S) -> None:
        self.run_dir = Path(run_dir)
        self.run = RunDir(run_dir)
        self.timeout_s = timeout_s
        self.restart_wait_s = restart_wait_s
        self._endpoint: Endpoint | None = None
        self._connected = asyncio.Event()
        self.window = max(1, credits)
        self._ctx: zmq.asyncio.Context | None = None
        self._sock: zmq.asyncio.Socket | None = None
        self._reader: asyncio.Task[None] | None = None
        self._req = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._stream: asyncio.Queue[c.ResultMsg | c.Lagged | c.ErrorReply | c.Shutdown] = asyncio.Queue()
        self._welcome: asyncio.Future[c.Welcome] | None = None
        self.seen: set[str] = set()
        self.lagged = 0
        self._subscribed = False
        self.shutdown: c.Shutdown | None = None
        """Set when the coordinator said it shuts down (the run finished, or it was stopped)."""

    async def __aenter__(self) -> RunClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> c.Welcome:
        ep = read_endpoint(self.run_dir, component_name("coordinator"))
        if ep is None:
            raise ClientError(f"no coordinator endpoint in {self.run.endpoints}; is the run started?")
        keys = load_keys(self.run_dir)
        self._ctx = zmq.asyncio.Context()
        sock = self._ctx.socket(zmq.DEALER)
        sock.linger = 0
        configure_client(sock, keys)
        sock.connect(ep.url)
        self._sock = sock
        self._endpoint = ep
        self._welcome = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read_loop())
        await sock.send(c.encode(c.Hello(protocol=c.PROTOCOL_VERSION, role="client", pid=os.getpid())))
        try:
            welcome = await asyncio.wait_for(self._welcome, self.timeout_s)
        except TimeoutError:
            await self.close()
            raise ClientError(self._no_answer(ep.url)) from None
        self.shutdown = None
        self._connected.set()
        return welcome

    async def _follow_restart(self) -> bool:
        """After a ``Shutdown`` that did not end the run: connect to the next coordinator once its endpoint is
        written; False when none answered within ``restart_wait_s``."""
        old = self._endpoint
        await self.close()
        deadline = time.monotonic() + self.restart_wait_s
        log.info("the coordinator stopped without the run ending; waiting up to %.0fs for the next one",
                 self.restart_wait_s)
        while time.monotonic() < deadline:
            if self._run_finished():  # the next one finished the run before this client reached it
                return False
            ep = read_endpoint(self.run_dir, component_name("coordinator"))
            if ep is not None and (old is None or (ep.url, ep.pid, ep.started_at) != (old.url, old.pid,
                                                                                       old.started_at)):
                try:
                    await self.connect()
                except ClientError as err:
                    log.warning("the next coordinator at %s: %s; trying again", ep.url, err)
                else:
                    log.info("connected to the next coordinator at %s", ep.url)
                    return True
            await asyncio.sleep(0.5)
        return False

    def _run_finished(self) -> bool:
        st = self.run.read_status()
        return st is not None and st.finished

    def _no_answer(self, url: str) -> str:
        st = self.run.read_status()
        if st is not None and st.finished:
            return (f"run {st.run_name or self.run_dir.name!r} finished ({st.tasks_completed}/{st.tasks} "
                    f"tasks, {st.sessions.get('committed', 0)} sessions committed); its coordinator is gone. Read "
                    f"the results from {self.run.shards} (ShardReader, TraceReader, polar-hpc report)")
        return (f"coordinator at {url} did not answer within {self.timeout_s:.0f}s: it is not running (stopped "
                f"or crashed; see {self.run.status_path}), or this client has other keys than "
                f"{self.run.secrets}")

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
            self._reader = None
        if self._sock is not None:
            self._sock.close(linger=0)
            self._sock = None
        if self._ctx is not None:
            self._ctx.term()
            self._ctx = None

    async def _read_loop(self) -> None:
        assert self._sock is not None
        dec = c.client_decoder()
        while True:
            frame = await self._sock.recv()
            try:
                msg = dec.decode(frame)
            except msgspec.DecodeError as err:
                log.warning("dropped an unreadable message from the coordinator: %s", err)
                continue
            match msg:
                case c.Welcome():
                    if self._welcome is not None and not self._welcome.done():
                        self._welcome.set_result(msg)
                case c.Refused():
                    refused = ClientError(f"coordinator refused this client: {msg.reason}")
                    if self._welcome is not None and not self._welcome.done():
                        self._welcome.set_exception(refused)
                    for fut in self._pending.values():
                        if not fut.done():
                            fut.set_exception(refused)
                case c.ResultMsg() | c.Lagged():
                    self._stream.put_nowait(msg)
                case c.ErrorReply(error=c.UNKNOWN_SUBSCRIBER):
                    if self._subscribed:  # subscribe again right away, also while the caller is busy
                        log.warning("the coordinator dropped this result subscription; subscribing again")
                        await self._send(c.Subscribe(credits=self.window))
                        self._stream.put_nowait(msg)
                case c.Shutdown():
                    self.shutdown = msg
                    if not msg.final:
                        self._connected.clear()
                    gone = ClientError(f"the coordinator shut down: {msg.reason or 'no reason given'}")
                    for fut in self._pending.values():
                        if not fut.done():
                            fut.set_exception(gone)
                    self._stream.put_nowait(msg)
                case c.HeartbeatAck():
                    pass
                case _:
                    waiter = self._pending.pop(getattr(msg, "req", 0), None)
                    if waiter is not None and not waiter.done():
                        waiter.set_result(msg)

    async def _send(self, msg: c.Msg) -> None:
        if self._sock is None:
            raise ClientError("not connected; use `async with RunClient(run_dir)` or `await connect()`")
        await self._sock.send(c.encode(msg))

    async def _request(self, msg: Any) -> Any:
        if self.shutdown is not None and not self.shutdown.final and self._subscribed:  # the stream follows it
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._connected.wait(), self.restart_wait_s)
        if self.shutdown is not None:
            raise ClientError(f"the coordinator shut down: {self.shutdown.reason or 'no reason given'}")
        req = next(self._req)
        msg.req = req
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[req] = fut
        await self._send(msg)
        try:
            reply = await asyncio.wait_for(fut, self.timeout_s)
        except TimeoutError:
            raise ClientError(f"no reply to {type(msg).__name__} within {self.timeout_s:.0f}s") from None
        finally:
            self._pending.pop(req, None)
        if isinstance(reply, c.ErrorReply):
            raise ClientError(reply.error)
        return reply

    async def submit(self, tasks: Iterable[Task]) -> c.SubmitReply:
        """Send tasks to the coordinator; raises :class:`ConfigError` (nothing is sent) when any task would be
        rejected for a bad name or value, naming each problem."""
        from polar_hpc.config import ConfigError
        from polar_hpc.tasks.validate import task_problems

        batch = list(tasks)
        problems = [p for t in batch for p in task_problems(t)]
        if problems:
            raise ConfigError("; ".join(problems))
        reply: c.SubmitReply = await self._request(c.SubmitTasks(tasks=batch))
        return reply

    async def status(self) -> c.RunStatus:
        """Run progress: sessions per state, ranks alive, throughput, ``finished``."""
        reply: c.RunStatus = await self._request(c.GetRunStatus())
        return reply

    async def task_status(self, task_id: str, *, with_results: bool = False) -> c.TaskStatus:
        """One task's state and sessions (``found`` False for an unknown id); its results with ``with_results``."""
        reply: c.TaskStatus = await self._request(c.GetTaskStatus(task_id=task_id, with_results=with_results))
        return reply

    async def cancel(self, task_id: str) -> c.CancelReply:
        """Cancel a task's pending and running sessions (running ones are stopped at their gateway)."""
        reply: c.CancelReply = await self._request(c.CancelTask(task_id=task_id))
        return reply

    async def results(self, *, catch_up: bool = True, keepalive_s: float = 5.0) -> AsyncGenerator[SessionResult, None]:
        """Results as sessions finish (first result per key only), until the caller stops iterating or the
        coordinator shuts down (then, with ``catch_up``, the committed results not streamed yet come first)."""
        await self._send(c.Subscribe(credits=self.window))
        self._subscribed = True
        owed = 0
        last_sent = time.monotonic()
        keepalive = asyncio.create_task(self._keepalive(keepalive_s))
        try:
            while True:
                try:
                    msg = await asyncio.wait_for(self._stream.get(), keepalive_s)
                except TimeoutError:
                    if not self._run_finished():
                        continue
                    # a coordinator that finished the run before this subscription reached it said nothing to it
                    msg = self.shutdown = c.Shutdown(reason="run finished (status.json)")
                if isinstance(msg, c.Shutdown):
                    if catch_up:
                        for r in self._from_shards(self._shards_dir()):
                            yield r
                    if not msg.final and await self._follow_restart():
                        await self._send(c.Subscribe(credits=self.window))
                        owed, last_sent = 0, time.monotonic()
                        continue
                    if catch_up and not msg.final:  # what the next coordinator committed before it finished
                        for r in self._from_shards(self._shards_dir()):
                            yield r
                    log.info("the coordinator shut down (%s); the result stream ends", msg.reason)
                    return
                if isinstance(msg, c.ErrorReply):  # the read loop subscribed again: a fresh credit window
                    owed, last_sent = 0, time.monotonic()
                    if catch_up:
                        for r in self._from_shards(self._shards_dir()):
                            yield r
                    continue
                if isinstance(msg, c.Lagged):
                    self.lagged += msg.dropped
                    log.warning("fell %d results behind the coordinator; catching up from %s", msg.dropped,
                                msg.shards_dir)
                    if catch_up:
                        for r in self._from_shards(Path(msg.shards_dir)):
                            yield r
                    continue
                owed += 1
                if owed >= self.window // 2 or time.monotonic() - last_sent > keepalive_s:
                    await self._send(c.Credit(credits=owed))
                    owed, last_sent = 0, time.monotonic()
                if msg.result.key in self.seen:
                    continue
                self.seen.add(msg.result.key)
                yield msg.result
        finally:
            self._subscribed = False
            keepalive.cancel()
            await asyncio.gather(keepalive, return_exceptions=True)
            if self._sock is not None and self.shutdown is None:
                await self._send(c.Unsubscribe())

    async def _keepalive(self, every_s: float) -> None:
        """An empty ``Credit`` now and then, so the subscription outlives a caller busy between results."""
        while True:
            await asyncio.sleep(every_s)
            if self._sock is None:  # closed, or between two coordinators
                continue
            try:
                await self._send(c.Credit(credits=0))
            except (ClientError, zmq.ZMQError) as err:
                log.warning("result keep-alive not sent: %s", err)

    def _shards_dir(self) -> Path:
        welcome = self._welcome
        if welcome is not None and welcome.done() and not welcome.cancelled() and welcome.exception() is None:
            return Path(welcome.result().shards_dir)
        return self.run.shards

    def _from_shards(self, shards_dir: Path) -> list[SessionResult]:
        from polar_hpc.store.reader import ShardReader

        out: list[SessionResult] = []
        if not shards_dir.is_dir():
            return out
        for r in ShardReader(shards_dir).results():
            if r.key not in self.seen:
                self.seen.add(r.key)
                out.append(r)
        return out
