"""The coordinator process: a CURVE-secured ROUTER in front of ``DispatchState``.

Inbound frames are checked (size, shape, type) before anything else; a bad one is logged and dropped and the
coordinator keeps serving. Outbound traffic to a gateway is bounded by its capacity, to a trainer by its credits.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import zmq
import zmq.asyncio

from polar_hpc.config.run import RunConfig
from polar_hpc.coordinator.journal import GaveUp, Journal
from polar_hpc.coordinator.requests import cancel_task, submit_tasks, task_status
from polar_hpc.coordinator.restore import restore_state
from polar_hpc.coordinator.results import ResultBuffer
from polar_hpc.coordinator.router import bind_router, open_router
from polar_hpc.coordinator.state import DispatchState
from polar_hpc.coordinator.status import Progress, build_status
from polar_hpc.coordinator.subscribers import Subscribers
from polar_hpc.log import get_logger
from polar_hpc.wire import control as c
from polar_hpc.wire.endpoints import Endpoint, read_endpoint, write_endpoint
from polar_hpc.wire.rundir import RunDir, component_name
from polar_hpc.wire.security import ensure_keys, start_authenticator
from polar_hpc.wire.session import Task
from polar_hpc.wire.traces import TraceStatus

if TYPE_CHECKING:  # imported when the facade is on: aiohttp costs the coordinator ~0.3 s of start otherwise
    from polar_hpc.coordinator.http import HttpFacade

log = get_logger("coordinator")

ENDPOINT_NAME = component_name("coordinator")
RECV_BATCH = 256
"""Messages the receive loop handles per wake-up: those already queued are read without a round through the event
loop each (one await a message cost ~21 µs here, a batch ~3.4 µs a message: ``tools/bench/bench_cluster.py``);
then it yields, so that ticks and the coalesced dispatch run between batches."""
_ACK = c.encode(c.HeartbeatAck())
UNKNOWN_SUBSCRIBER = c.UNKNOWN_SUBSCRIBER


class Coordinator:
    def __init__(self, config: RunConfig, run_dir: str | Path, *, host: str | None = None, port: int | None = None,
                 tasks: Iterable[Task] = (), exit_when_done: bool = False,
                 max_frame_bytes: int = 512 * 1024 * 1024, max_pending: int = 1_000_000) -> None:
        self.config = config
        self.cc = config.coordinator
        self.run_dir = Path(run_dir)
        self.host = host or socket.gethostname()
        self.port = port
        self.exit_when_done = exit_when_done
        self.max_frame_bytes = max_frame_bytes
        self.paths = RunDir(run_dir)
        self.shards_dir = self.paths.shards
        self.state = DispatchState(max_attempts=self.cc.max_attempts,
                                   heartbeat_timeout_s=self.cc.heartbeat_timeout_s, max_pending=max_pending)
        self.subs = Subscribers(self.cc.result_buffer, str(self.shards_dir), timeout_s=self.cc.heartbeat_timeout_s)
        self.recent = ResultBuffer(self.cc.result_buffer, self.cc.result_buffer_mb * 1024 * 1024)
        self.journal = Journal(self.run_dir)
        self._initial_tasks = tasks
        self._decoder = c.coordinator_decoder()
        self._stop = asyncio.Event()
        self._hold_dispatch_until = 0.0
        self._dispatch_scheduled = False
        self._ack_every_s = min(self.cc.heartbeat_timeout_s / 4, 5 * self.cc.heartbeat_interval_s)
        self.dropped_frames = 0
        self.http: HttpFacade | None = None
        self.on_task_done: list[Callable[[str], None]] = []
        """Called with each task id once all its samples are done (the HTTP facade's task callbacks)."""
        self.started = time.time()
        self.progress = Progress(self.started)

    # ---- start / stop -----------------------------------------------------------------------------------

    def restore(self) -> None:
        """Rebuild from the shards (a session is done when it is in one) and the journal."""
        restore_state(self.state, self.shards_dir, self.journal, self._initial_tasks)

    async def run(self) -> int:
        keys = ensure_keys(self.run_dir)
        previous = read_endpoint(self.run_dir, ENDPOINT_NAME)
        restarted = previous is not None
        self.restore()
        ctx = zmq.asyncio.Context()
        auth = start_authenticator(ctx, keys)
        sock = self.sock = open_router(ctx, keys, self.max_frame_bytes)
        try:
            port = bind_router(sock, self.host,
                               self.port if self.port is not None else (previous.port if previous else 0))
            if self.cc.http_facade:
                from polar_hpc.coordinator.http import HttpFacade

                self.http = HttpFacade(self, keys.token)
                http_url = await self.http.start(self.host, self.cc.http_port)
            else:
                http_url = None
            write_endpoint(self.run_dir, Endpoint(name=ENDPOINT_NAME, url=f"tcp://{self.host}:{port}",
                                                  kind="coordinator", host=self.host, port=port, pid=os.getpid(),
                                                  protocol=c.PROTOCOL_VERSION, started_at=self.started,
                                                  http_url=http_url))
            if restarted:
                # live ranks re-register with the sessions they hold before we hand those out again
                self._hold_dispatch_until = time.monotonic() + min(self.cc.heartbeat_timeout_s,
                                                                   3 * self.cc.heartbeat_interval_s + 1.0)
            log.info("coordinator listening on tcp://%s:%d (%d tasks, %d sessions pending)", self.host, port,
                     len(self.state.tasks), len(self.state.pending))
            ticker = asyncio.create_task(self._tick_loop())
            receiver = asyncio.create_task(self._recv_loop())
            await self._stop.wait()
            if self.subs.subs:  # trainers' result streams end (or wait for the next coordinator) here
                for peer in list(self.subs.subs):
                    self._send(peer, self._shutdown())
                await asyncio.sleep(0.1)  # let ZeroMQ hand the frames over before the socket closes
            ticker.cancel()
            receiver.cancel()
            await asyncio.gather(ticker, receiver, return_exceptions=True)
            self._write_status()
        finally:
            if self.http is not None:
                await self.http.stop()
            self.journal.close()
            sock.close(linger=0)
            auth.stop()
            ctx.term()
        return 0

    def stop(self) -> None:
        self._stop.set()

    def _shutdown(self) -> c.Shutdown:
        """What subscribers hear when this coordinator stops: the run is over (it finished, or was cancelled), or a
        requeued coordinator takes over from the shards (its job stopped it, for a time limit or a preemption)."""
        if self.exit_when_done and self.state.finished:
            return c.Shutdown(reason="run finished")
        if self.paths.cancelled() is not None:
            return c.Shutdown(reason="run cancelled")
        return c.Shutdown(reason="coordinator stopped without the run ending (a requeue: the next one goes on)",
                          final=False)

    # ---- loops ------------------------------------------------------------------------------------------

    async def _recv_loop(self) -> None:
        queued: zmq.Socket[bytes] = zmq.Socket.shadow(self.sock.underlying)  # the same socket, no event loop
        while True:
            frames = await self.sock.recv_multipart()
            handled = 0
            while True:
                try:
                    self._handle(frames)
                except Exception:
                    log.exception("error handling a control message; dropped")
                handled += 1
                if handled >= RECV_BATCH:
                    break
                try:
                    frames = queued.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
            await asyncio.sleep(0)

    async def _tick_loop(self) -> None:
        interval = min(self.cc.heartbeat_interval_s, 0.5)
        last_status = 0.0
        while True:
            await asyncio.sleep(interval)
            try:
                last_status = await self._tick(last_status)
            except Exception:
                log.exception("coordinator housekeeping failed; continuing")

    async def _tick(self, last_status: float) -> float:
        now = time.monotonic()
        self.state.expire(now)
        self._journal_errors()
        self._notify_tasks()
        for peer in self.subs.expire(now):
            log.info("subscriber %s went silent; unsubscribed", peer.hex())
        self._dispatch()
        if now - last_status >= self.cc.status_interval_s:
            last_status = now
            self._write_status()
            self._ask_idle_ranks_to_commit()
        if self.exit_when_done and self.state.finished and not self.state.counts[c.SessionState.DONE]:
            log.info("all %d tasks finished; shutting the gateway ranks down", len(self.state.tasks))
            for r in self.state.ranks.values():
                if r.alive:
                    self._send(r.peer, c.Shutdown(reason="run finished"))
                    r.alive = False  # shut down: the final status counts no rank alive
            await asyncio.sleep(0.2)
            self.stop()
        return last_status

    def _ask_idle_ranks_to_commit(self) -> None:
        if self.state.pending:
            return
        for r in self.state.ranks.values():
            if r.alive and r.uncommitted and not r.in_flight:
                self._send(r.peer, c.CommitNow())

    def _write_status(self) -> None:
        self.paths.write_status(self.run_status())

    def run_status(self, req: int = 0) -> c.RunStatus:
        return build_status(self.state, self.progress, time.time(), run_name=self.config.name,
                            subscribers=len(self.subs), req=req, ends_when_done=self.exit_when_done)

    # ---- sending ----------------------------------------------------------------------------------------

    def _send(self, peer: bytes, msg: c.Msg) -> None:
        self._send_raw(peer, c.encode(msg))

    def _send_raw(self, peer: bytes, frame: bytes) -> None:
        try:
            self.sock.send_multipart([peer, frame], flags=zmq.NOBLOCK)
        except zmq.Again:
            log.warning("peer %s is not reading; message dropped", peer.hex())

    def _dispatch(self) -> None:
        """Coalesce: dispatch once after the messages that are already waiting have been handled."""
        if not self._dispatch_scheduled:
            self._dispatch_scheduled = True
            asyncio.get_running_loop().call_soon(self._dispatch_now)

    def _dispatch_now(self) -> None:
        self._dispatch_scheduled = False
        if time.monotonic() < self._hold_dispatch_until:
            return
        for rank, sessions in self.state.dispatch().items():
            self._send(self.state.ranks[rank].peer, c.Dispatch(sessions=sessions))

    def _journal_errors(self) -> None:
        if self.state.errored:
            self.journal.append([GaveUp(key=k, error=e) for k, e in self.state.errored])
            self.state.errored.clear()

    # ---- inbound ----------------------------------------------------------------------------------------

    def _drop(self, peer: bytes, why: str) -> None:
        self.dropped_frames += 1
        log.warning("dropped a control frame from peer %s: %s", peer.hex() or "?", why)

    def _handle(self, frames: list[bytes]) -> None:
        peer = frames[0] if frames else b""
        if len(frames) != 2:
            self._drop(peer, f"expected 2 frames (identity, message), got {len(frames)}")
            return
        buf = frames[1]
        if len(buf) > self.max_frame_bytes:
            self._drop(peer, f"{len(buf)} bytes exceeds the {self.max_frame_bytes}-byte limit")
            return
        try:
            msg = self._decoder.decode(buf)
        except (msgspec.DecodeError, ValueError) as err:
            self._drop(peer, f"not a control message: {err}")
            return
        now = time.monotonic()
        match msg:
            case c.Heartbeat():
                r = self.state.heartbeat(peer, now, msg.occupancy, msg.draining)
                if r is None:
                    self._rehello(peer)
                elif now - r.last_ack > self._ack_every_s:  # the rank only needs to know we are alive
                    r.last_ack = now
                    self._send_raw(peer, _ACK)
            case c.SessionStatus():
                self.state.status(peer, msg.key, msg.attempt, msg.stage)
            case c.SessionDone():
                self._on_done(peer, msg)
            case c.Committed():
                self._on_committed(peer, msg)
            case c.Rejected():
                log.info("rank refused session %s: %s", msg.key, msg.reason)
                self.state.reject(peer, msg.key, msg.attempt)
                self._dispatch()
            case c.Released():
                log.info("rank released session %s attempt %d (%s%s)", msg.key, msg.attempt, msg.cause,
                         f": {msg.reason}" if msg.reason else "")
                if self.state.rank_of(peer) is None:
                    self._rehello(peer)
                    return
                self.state.release(peer, msg.key, msg.attempt, msg.cause)
                self._journal_errors()
                self._notify_tasks()
                self._dispatch()
            case c.Hello():
                self._on_hello(peer, msg, now)
            case c.SubmitTasks():
                self._send(peer, self.submit(msg.tasks, req=msg.req))
            case c.GetTaskStatus():
                self._send(peer, self.task_status(msg.task_id, req=msg.req, with_results=msg.with_results))
            case c.GetRunStatus():
                self._send(peer, self.run_status(req=msg.req))
            case c.CancelTask():
                self._send(peer, self.cancel(msg.task_id, req=msg.req))
            case c.Subscribe():
                self.subs.subscribe(peer, msg.credits, now)
            case c.Credit():
                if peer not in self.subs.subs:
                    self._send(peer, c.ErrorReply(error=UNKNOWN_SUBSCRIBER))
                    return
                for frame in self.subs.credit(peer, msg.credits, now):
                    self._send_raw(peer, frame)
            case c.Unsubscribe():
                self.subs.unsubscribe(peer)

    def _rehello(self, peer: bytes) -> None:
        self._send(peer, c.Refused(reason="unknown gateway: the coordinator restarted or declared this rank "
                                          "dead; send Hello again", rehello=True))

    def _on_hello(self, peer: bytes, msg: c.Hello, now: float) -> None:
        reason = c.check_protocol(msg)
        if reason is not None:
            log.warning("refused %s rank %d on %s: %s", msg.role, msg.rank, msg.host, reason)
            self._send(peer, c.Refused(reason=reason))
            return
        welcome = c.Welcome(protocol=c.PROTOCOL_VERSION, run_name=self.config.name,
                            heartbeat_interval_s=self.cc.heartbeat_interval_s, shards_dir=str(self.shards_dir))
        if msg.role == "gateway":
            stale = self.state.register(peer, msg.rank, msg.capacity, now, host=msg.host,
                                        proxy_endpoint=msg.proxy_endpoint, active=msg.active,
                                        uncommitted=msg.uncommitted,
                                        committed=[k for shard in msg.committed for k in shard.keys],
                                        draining=msg.draining)
            log.info("gateway rank %d registered from %s (capacity %d, holding %d running / %d uncommitted / "
                     "%d committed unacknowledged)", msg.rank, msg.host, msg.capacity, len(msg.active),
                     len(msg.uncommitted), len(msg.committed))
            self._notify_tasks()
            self._send(peer, welcome)
            for shard in msg.committed:
                self._send(peer, c.CommitAck(path=shard.path))
            if stale:
                self._send(peer, c.CancelSessions(keys=stale))
            revoked, self.state.revoked = self.state.revoked, {}
            for rank, keys in revoked.items():
                self._send(self.state.ranks[rank].peer, c.CancelSessions(keys=keys))
            self._dispatch()
        else:
            self._send(peer, welcome)

    def _on_done(self, peer: bytes, msg: c.SessionDone) -> None:
        if self.state.rank_of(peer) is None:
            self._rehello(peer)
            return
        first = self.state.done(peer, msg.key, msg.attempt, reward=msg.summary.reward,
                                accepted=msg.summary.accepted, error=msg.summary.error, tokens=msg.summary.tokens,
                                failed=msg.summary.status == TraceStatus.ERROR)
        if first and msg.result is not None:
            self.recent.add(msg.result)
            seq = self.subs.next_seq()
            if self.subs.subs:
                frame = c.encode(c.ResultMsg(seq=seq, result=msg.result))
                for p, f in self.subs.publish(seq, frame):
                    self._send_raw(p, f)
        self._dispatch()

    def _on_committed(self, peer: bytes, msg: c.Committed) -> None:
        known = self.state.rank_of(peer) is not None
        self.state.committed(peer, msg.keys)
        self._notify_tasks()
        self._send(peer, c.CommitAck(path=msg.path))
        if not known:
            self._rehello(peer)
        self._dispatch()

    def _notify_tasks(self) -> None:
        done, self.state.completed_tasks = self.state.completed_tasks, []
        for tid in done:
            for cb in self.on_task_done:
                cb(tid)

    # ---- client requests (also used by the HTTP facade) -------------------------------------------------

    def submit(self, tasks: list[Task], req: int = 0) -> c.SubmitReply:
        reply = submit_tasks(self.state, self.journal, tasks, req)
        self._notify_tasks()
        self._dispatch()
        return reply

    def cancel(self, task_id: str, req: int = 0) -> c.CancelReply:
        reply, running = cancel_task(self.state, self.journal, task_id, req)
        for rank, keys in running.items():
            r = self.state.ranks.get(rank)
            if r is not None and r.alive:
                self._send(r.peer, c.CancelSessions(keys=keys))
        return reply

    def task_status(self, task_id: str, req: int = 0, with_results: bool = False) -> c.TaskStatus:
        return task_status(self.state, self.recent, task_id, req=req, with_results=with_results)
