"""The gateway rank's side of the control plane: a DEALER that registers the rank with the coordinator,
heartbeats, turns ``Dispatch`` into ``rank.submit`` and reports status, results and shard commits.

If the coordinator goes silent for ``heartbeat_timeout_s`` (restart, new port), the client re-reads
``endpoints/coordinator.json``, reconnects and registers again with the sessions it still holds, so a restarted
coordinator adopts them instead of running them twice. Published shards are kept (path, keys) until the
coordinator acknowledges their ``Committed`` (``CommitAck``) and named in every ``Hello`` until then, so a
``Committed`` lost with a connection never makes the coordinator run those sessions again. Every session that ends
without a result (cancelled, cut by a drain, lost to a failed shard write) is reported with ``Released``.

The rank's callbacks may fire on any thread (``on_commit`` fires inside the shard writer's worker thread): they
hop to the event loop before touching this object's state.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol, TypeVarTuple

import msgspec
import zmq
import zmq.asyncio

from polar_hpc.gateway.stages import Stage
from polar_hpc.gateway.waits import WaitFailed, wait_for_endpoints
from polar_hpc.log import get_logger
from polar_hpc.wire import control as c
from polar_hpc.wire.ids import SessionId
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.rundir import RunDir, component_name
from polar_hpc.wire.security import configure_client, load_keys
from polar_hpc.wire.session import Session
from polar_hpc.wire.traces import is_accepted

log = get_logger("gateway.control")

_Args = TypeVarTuple("_Args")


class ControlledRank(Protocol):
    """What the control client needs from a gateway rank (``GatewayRank`` or a simulated one)."""

    on_status: Callable[[str, Stage], None] | None
    """(session_id, stage) on every stage change."""
    on_done: Callable[[SessionResult], None] | None
    on_commit: Callable[[Path, list[str]], None] | None
    """(shard path, session keys) after each shard is published."""

    @property
    def capacity(self) -> int: ...

    @property
    def paused(self) -> bool:
        """The rank takes no sessions for now (its engine is gone); heartbeats say so, dispatches are refused."""

    def occupancy(self) -> dict[str, int]: ...

    def submit(self, session: Session) -> Awaitable[None] | None:
        """Take the session (a coroutine or not); raises when the rank cannot."""

    async def cancel(self, session_id: str) -> bool: ...

    def commit(self) -> Awaitable[object] | None:
        """Publish what is buffered as a shard now (a coroutine or not)."""

    async def drain(self) -> None: ...


class ControlRefused(RuntimeError):
    pass


def summarize(result: SessionResult) -> c.SessionSummary:
    traj = result.trajectory
    return c.SessionSummary(
        status=int(traj.status), reward=result.reward,
        accepted=is_accepted(traj.status, result.reward),
        num_traces=len(traj.traces), tokens=sum(len(t.prompt_ids) + len(t.response_ids) for t in traj.traces),
        duration_s=result.duration_s,
        error=traj.error,
    )


class GatewayControl:
    def __init__(self, rank: ControlledRank, run_dir: str | Path, *, rank_id: int, proxy_endpoint: str = "",
                 heartbeat_interval_s: float = 1.0, heartbeat_timeout_s: float = 30.0,
                 connect_timeout_s: float = 120.0, send_results: bool = True) -> None:
        self.rank = rank
        self.run_dir = Path(run_dir)
        self.rank_id = rank_id
        self.proxy_endpoint = proxy_endpoint
        self.interval = heartbeat_interval_s
        self.timeout = heartbeat_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.send_results = send_results
        self.active: dict[str, int] = {}
        self.uncommitted: dict[str, int] = {}
        self.unacked: dict[str, list[str]] = {}
        """Published shards (path -> keys) whose ``Committed`` the coordinator has not acknowledged yet."""
        self._cancelling: set[str] = set()
        self.draining = False
        self._outbox: asyncio.Queue[c.Msg] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        """The event loop's thread (set by :meth:`run`)."""
        self._stop = asyncio.Event()
        self._decoder = c.gateway_decoder()
        self._drain_task: asyncio.Task[None] | None = None
        self._last_hello = 0.0
        rank.on_status = self._on_status
        rank.on_done = self._on_done
        rank.on_commit = self._on_commit

    # ---- callbacks from the rank (any thread) -----------------------------------------------------------

    def _on_loop(self, fn: Callable[[*_Args], None], *args: *_Args) -> None:
        """Run ``fn`` on the event loop thread (now if already there), in call order."""
        loop = self._loop
        if loop is None:
            return
        if threading.get_ident() == self._thread:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    def _post(self, msg: c.Msg) -> None:
        self._on_loop(self._outbox.put_nowait, msg)

    def _on_status(self, session_id: str, stage: str) -> None:
        self._on_loop(self._status_on_loop, session_id, str(stage))

    def _status_on_loop(self, session_id: str, stage: str) -> None:
        sid = SessionId.parse(session_id)
        key, attempt = sid.key, sid.attempt
        self._outbox.put_nowait(c.SessionStatus(key=key, attempt=attempt, stage=stage))
        if stage in (Stage.CANCELLED, Stage.RELEASED):
            self._released(key, attempt, cut=stage == Stage.RELEASED)

    def _released(self, key: str, attempt: int, cut: bool = False) -> None:
        """The session ended without a result the rank keeps: tell the coordinator why, free its slot. ``cut``:
        the system cut it (a drain, its engine gone): queued again without a failure counted."""
        cause: c.ReleaseCause
        if self.active.get(key) == attempt:
            del self.active[key]
            if key in self._cancelling:
                cause, reason = "cancelled", "the coordinator cancelled it"
            elif self.draining:
                cause, reason = "drained", "the rank is draining"
            elif cut:
                cause, reason = "interrupted", "cut by the system (its engine went away)"
                self._post(self._heartbeat())
            else:
                cause, reason = "failed", "the rank's session pool failed it"
        elif self.uncommitted.get(key) == attempt:  # on_done was sent, then the shard write failed
            del self.uncommitted[key]
            cause, reason = "failed", "the result could not be written to the shard"
        else:
            return
        self._cancelling.discard(key)
        self._outbox.put_nowait(c.Released(key=key, attempt=attempt, cause=cause, reason=reason))

    def _on_done(self, result: SessionResult) -> None:
        self._on_loop(self._done_on_loop, result)

    def _done_on_loop(self, result: SessionResult) -> None:
        key = result.key
        self.active.pop(key, None)
        self._cancelling.discard(key)
        self.uncommitted[key] = result.attempt
        self._outbox.put_nowait(c.SessionDone(key=key, attempt=result.attempt, summary=summarize(result),
                                              result=result if self.send_results else None))

    def _on_commit(self, path: Path, keys: list[str]) -> None:
        self._on_loop(self._commit_on_loop, str(path), list(keys))

    def _commit_on_loop(self, path: str, keys: list[str]) -> None:
        for k in keys:
            self.uncommitted.pop(k, None)
        self.unacked[path] = keys
        self._outbox.put_nowait(c.Committed(rank=self.rank_id, path=path, keys=keys))

    # ---- lifecycle --------------------------------------------------------------------------------------

    def request_drain(self, reason: str = "") -> None:
        """Stop taking sessions, let the rank finish and commit, then end ``run`` (SIGTERM path)."""
        if self._drain_task is None and self._loop is not None:
            log.info("rank %d draining%s", self.rank_id, f" ({reason})" if reason else "")
            self.draining = True
            self._post(self._heartbeat())
            self._drain_task = self._loop.create_task(self._drain_then_stop())

    async def _drain_then_stop(self) -> None:
        try:
            await self.rank.drain()
        finally:
            self._post(self._heartbeat())
            self._stop.set()

    def _hello(self) -> c.Hello:
        return c.Hello(
            protocol=c.PROTOCOL_VERSION, role="gateway", rank=self.rank_id, host=socket.gethostname(),
            pid=os.getpid(), proxy_endpoint=self.proxy_endpoint, capacity=self.rank.capacity,
            active=[c.SessionRef(k, a) for k, a in self.active.items()],
            uncommitted=[c.SessionRef(k, a) for k, a in self.uncommitted.items()],
            committed=[c.ShardRef(p, keys) for p, keys in self.unacked.items()], draining=self.draining,
        )

    def _heartbeat(self) -> c.Heartbeat:
        occ = self.rank.occupancy()
        return c.Heartbeat(rank=self.rank_id, occupancy=occ, free=max(0, self.rank.capacity - len(self.active)),
                           uncommitted=len(self.uncommitted), draining=self.draining or self.rank.paused)

    async def _endpoint(self) -> str | None:
        """The coordinator's address once it is published (waiting while its Slurm job is queued; failing at
        once if that job ended), or ``None`` when the rank is stopped meanwhile."""
        waiting = asyncio.create_task(wait_for_endpoints(
            self.run_dir, [component_name("coordinator")], me=component_name("gateway", self.rank_id),
            timeout_s=self.connect_timeout_s, poll_s=0.2))
        stopper = asyncio.create_task(self._stop.wait())
        try:
            await asyncio.wait([waiting, stopper], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopper.cancel()
            if not waiting.done():
                waiting.cancel()
            await asyncio.gather(waiting, stopper, return_exceptions=True)
        if waiting.cancelled():
            return None
        try:
            (ep,) = waiting.result()
        except WaitFailed as err:
            raise TimeoutError(f"no coordinator endpoint: {err}; is the coordinator running?") from None
        return ep.url

    async def run(self) -> str:
        """Serve until Shutdown, the end of a drain, or a finished run. Returns why it ended."""
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        keys = load_keys(self.run_dir)
        ctx = zmq.asyncio.Context()
        reason = "stopped"
        sock: zmq.asyncio.Socket | None = None
        try:
            while not self._stop.is_set():
                if self._run_finished():
                    log.info("rank %d: the run is finished (status.json); not connecting", self.rank_id)
                    return "finished"
                address = await self._endpoint()
                if address is None:
                    break
                sock = ctx.socket(zmq.DEALER)
                sock.linger = 0
                configure_client(sock, keys)
                sock.connect(address)
                log.info("rank %d connecting to the coordinator at %s", self.rank_id, address)
                reason = await self._session(sock)
                # a short linger lets the final Committed reach the coordinator; bounded, so never a hang
                sock.close(linger=0 if reason == "lost" else 2000)
                sock = None
                if reason != "lost":
                    break
                log.warning("rank %d lost the coordinator; reconnecting", self.rank_id)
        finally:
            if sock is not None:
                sock.close(linger=0)
            ctx.term()
        return reason

    def _run_finished(self) -> bool:
        status = RunDir(self.run_dir).read_status()
        return status is not None and status.finished

    async def _session(self, sock: zmq.asyncio.Socket) -> str:
        self._last_hello = time.monotonic()
        await sock.send(c.encode(self._hello()))
        last_heard = time.monotonic()
        last_beat = time.monotonic()
        sender = asyncio.create_task(self._send_loop(sock))
        stop_wait = asyncio.create_task(self._stop.wait())
        try:
            while True:
                now = time.monotonic()
                if now - last_heard > self.timeout:
                    return "lost"
                if now - last_beat >= self.interval:
                    last_beat = now
                    self._post(self._heartbeat())
                recv = asyncio.ensure_future(sock.recv())
                done, _ = await asyncio.wait({recv, stop_wait}, timeout=self.interval,
                                             return_when=asyncio.FIRST_COMPLETED)
                if recv not in done:
                    recv.cancel()
                    if stop_wait in done:
                        await self._flush(sock)
                        return "drained"
                    continue
                last_heard = time.monotonic()
                try:
                    msg = self._decoder.decode(recv.result())
                except msgspec.DecodeError as err:
                    log.warning("dropped an unreadable message from the coordinator: %s", err)
                    continue
                ended = await self._handle(sock, msg)
                if ended:
                    return ended
        finally:
            sender.cancel()
            stop_wait.cancel()
            await asyncio.gather(sender, stop_wait, return_exceptions=True)

    async def _send_loop(self, sock: zmq.asyncio.Socket) -> None:
        while True:
            msg = await self._outbox.get()
            await sock.send(c.encode(msg))

    async def _flush(self, sock: zmq.asyncio.Socket) -> None:
        while not self._outbox.empty():
            await sock.send(c.encode(self._outbox.get_nowait()))

    async def _handle(self, sock: zmq.asyncio.Socket, msg: c.Msg) -> str | None:
        match msg:
            case c.Dispatch():
                for s in msg.sessions:
                    await self._submit(s)
            case c.HeartbeatAck() | c.Welcome():
                pass
            case c.CommitAck():
                self.unacked.pop(msg.path, None)
            case c.Refused(rehello=True):
                if time.monotonic() - self._last_hello > self.interval:
                    self._last_hello = time.monotonic()
                    await sock.send(c.encode(self._hello()))
            case c.Refused():
                raise ControlRefused(f"coordinator refused rank {self.rank_id}: {msg.reason}")
            case c.CancelSessions():
                for key in msg.keys:
                    attempt = self.active.get(key)
                    if attempt is None:
                        if key in self.uncommitted:
                            log.warning("rank %d: coordinator cancelled %s, already done here; its result stays "
                                        "in this rank's next shard", self.rank_id, key)
                        continue
                    self._cancelling.add(key)
                    await self.rank.cancel(str(SessionId.of_key(key, attempt)))
            case c.CommitNow():
                r = self.rank.commit()
                if inspect.isawaitable(r):
                    await r
            case c.Drain():
                self.request_drain(msg.reason or "coordinator asked")
            case c.Shutdown():
                self.request_drain(msg.reason or "shutdown")
                if self._drain_task is not None:
                    await self._drain_task
                await self._flush(sock)
                return "shutdown"
        return None

    async def _submit(self, session: Session) -> None:
        key = session.key
        if self.draining or self.rank.paused:
            why = "rank is draining" if self.draining else "rank is paused: its engine is gone"
            self._post(c.Rejected(key=key, attempt=session.attempt, reason=why))
            return
        self.active[key] = session.attempt
        try:
            r = self.rank.submit(session)
            if inspect.isawaitable(r):
                await r
        except Exception as err:
            self.active.pop(key, None)
            log.warning("rank %d could not take session %s: %s", self.rank_id, key, err)
            self._post(c.Rejected(key=key, attempt=session.attempt, reason=str(err)))
