"""One gateway rank: the proxy, the stage pools and the rank's own shard writer, in one asyncio process.

Sessions come in through :meth:`GatewayRank.submit` (a local queue, or the control plane's ``Dispatch``);
results go out through the ``on_status`` / ``on_done`` / ``on_commit`` callbacks, which the control client
sets. ``on_done`` fires before the result is handed to the shard writer, so ``on_commit`` (which may fire inside
that hand-off) always follows the ``on_done`` of every session it names.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from polar_hpc import __version__
from polar_hpc.assets import resolve_model
from polar_hpc.chat.template import ChatTemplate
from polar_hpc.config.run import RunConfig
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.gateway.endpoints import engine_endpoints
from polar_hpc.gateway.executor import SessionExecutor as RealExecutor
from polar_hpc.gateway.pools import StagePools
from polar_hpc.gateway.stages import SessionExecutor, Stage
from polar_hpc.gateway.waits import JobWatch
from polar_hpc.log import get_logger
from polar_hpc.proxy.server import ProxyServer
from polar_hpc.runtime import backend
from polar_hpc.store.writer import ShardWriter
from polar_hpc.util.fs import unique_name, write_atomic
from polar_hpc.wire.codec import to_json
from polar_hpc.wire.endpoints import read_endpoints
from polar_hpc.wire.resolved import resolve_session
from polar_hpc.wire.results import Released, SessionResult
from polar_hpc.wire.rundir import RunDir, component_name, component_prefix
from polar_hpc.wire.security import run_api_key
from polar_hpc.wire.session import Session
from polar_hpc.wire.waits import WaitRecord, clear_wait, write_wait

log = get_logger("gateway.rank")

SHARD_POLL_S = 1.0
ENDPOINT_POLL_S = 5.0
ENGINE_PROBE_S = 2.0
"""While its engine is gone, how often a paused rank asks its inference servers whether they are back."""
UNIX_PATH_MAX = 100


class GatewayRank:
    def __init__(self, config: RunConfig, rank: int, run_dir: str | os.PathLike[str], *,
                 executor: SessionExecutor | None = None, keep_session_dirs: bool = False) -> None:
        self.config = config
        self.rank = rank
        self.run_dir = Path(run_dir)
        self.on_status: Callable[[str, Stage], None] | None = None
        self.on_done: Callable[[SessionResult], None] | None = None
        self.on_commit: Callable[[Path, list[str]], None] | None = None
        self.keep_session_dirs = keep_session_dirs
        self.proxy_url = ""
        self.proxy_socket: Path | None = None
        self._executor = executor
        self._proxy: ProxyServer | None = None
        self._engine: SGLangEngine | None = None
        self._writer: ShardWriter | None = None
        self._pools: StagePools | None = None
        self._write_lock = asyncio.Lock()
        self._poller: asyncio.Task[None] | None = None
        self._refresher: asyncio.Task[None] | None = None
        self._socket_dir: Path | None = None
        self._closed = False
        self._drained = False
        self.paused_since: float | None = None
        """Wall time since when the rank takes no sessions: a session found no model server (None: running)."""
        self.shards_failing: str | None = None
        """Why the last shard could not be published (the disk is full, ...): the rank takes no sessions until a
        shard is published again; what it holds stays buffered (None: shards publish)."""
        self._prober: asyncio.Task[None] | None = None
        self.results_done = 0

    # -- lifecycle --------------------------------------------------------------------------------------------
    async def start(self) -> None:
        cfg = self.config
        executor = self._executor
        model = cfg.inference.served_model_name
        if executor is None:
            executor = await self._start_proxy_and_executor()
        producer = {"component": "gateway", "rank": str(self.rank), "host": socket.gethostname(),
                    "polar_hpc": __version__, "model": model}
        self._writer = ShardWriter(RunDir(self.run_dir).shards, self.rank, cfg.shards, producer,
                                   on_commit=self._committed)
        self._pools = StagePools(cfg.gateway, executor, self._sink, on_status=self._status,
                                 on_released=self._set_aside, rank=self.rank, model=model)
        self._poller = asyncio.create_task(self._poll_shards(), name=f"rank{self.rank}:shard-poll")
        if not self.config.inference.endpoints:
            self._refresher = asyncio.create_task(self._refresh_endpoints(), name=f"rank{self.rank}:endpoints")
        log.info("gateway rank %d ready: proxy %s, pools init=%d ready=%d run=%d postrun=%d", self.rank,
                 self.proxy_url or "(none)", cfg.gateway.init_pool, cfg.gateway.ready_buffer, cfg.gateway.run_pool,
                 cfg.gateway.postrun_pool)

    async def _start_proxy_and_executor(self) -> SessionExecutor:
        cfg = self.config
        inf = cfg.inference
        template = await asyncio.to_thread(ChatTemplate.from_model_dir, resolve_model(inf.model))
        endpoints = await engine_endpoints(cfg, self.run_dir, me=component_name("gateway", self.rank))
        engine = self._engine = SGLangEngine.from_config(endpoints, inf, cfg.proxy, api_key=run_api_key(self.run_dir))
        records = RunDir(self.run_dir).records if cfg.gateway.keep_records else None
        proxy = self._proxy = ProxyServer.from_config(template, engine, inference=inf, proxy=cfg.proxy,
                                                      gateway=cfg.gateway, records_dir=records)
        unix_path = self._socket_path() if cfg.runtime.network == "none" else None
        self.proxy_url = await proxy.start(host="127.0.0.1", port=cfg.gateway.proxy_port,
                                                 unix_path=str(unix_path) if unix_path else None)
        self.proxy_socket = unix_path
        sessions_dir = RunDir(self.run_dir).sessions(self.rank)
        await self._stop_stale_instances()
        if sessions_dir.exists():  # left by an earlier life of this rank (crash, preemption): start clean
            await asyncio.to_thread(shutil.rmtree, sessions_dir, True)
        sessions_dir.mkdir(parents=True, exist_ok=True)
        return RealExecutor(cfg, proxy=proxy, proxy_url=self.proxy_url, proxy_socket=unix_path,
                            sessions_dir=sessions_dir, end_of_turn_id=template.end_of_turn_id,
                            keep_session_dirs=self.keep_session_dirs)

    async def _stop_stale_instances(self) -> None:
        """Apptainer instances and containers are daemons that may outlive a crashed rank: stop this run+rank's
        leftovers."""
        name = self.config.runtime.backend
        try:
            await backend(name).stop_stale(self.run_dir, self.rank)
        except Exception as err:
            log.warning("rank %d: stopping stale %s sandboxes: %r", self.rank, name, err)

    def _socket_path(self) -> Path:
        path = RunDir(self.run_dir).proxy_socket(self.rank)
        if len(str(path)) > UNIX_PATH_MAX:
            self._socket_dir = Path(tempfile.mkdtemp(prefix="polar-proxy-"))
            path = self._socket_dir / "proxy.sock"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    async def __aenter__(self) -> GatewayRank:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- work -------------------------------------------------------------------------------------------------
    @property
    def pools(self) -> StagePools:
        if self._pools is None:
            raise RuntimeError(f"gateway rank {self.rank}: call start() first")
        return self._pools

    @property
    def writer(self) -> ShardWriter:
        if self._writer is None:
            raise RuntimeError(f"gateway rank {self.rank}: call start() first")
        return self._writer

    async def submit(self, session: Session) -> None:
        """Take one session, its task resolved against the recipe (raises ``DrainingError`` once draining)."""
        self.pools.submit(resolve_session(session, self.config))

    async def cancel(self, session_id: str) -> bool:
        return await self.pools.cancel(session_id)

    @property
    def capacity(self) -> int:
        return self.pools.capacity

    def occupancy(self) -> dict[str, int]:
        return self.pools.occupancy()

    @property
    def in_flight(self) -> int:
        return len(self.pools.jobs)

    @property
    def draining(self) -> bool:
        return self.pools.draining

    @property
    def paused(self) -> bool:
        """Take no session for now: the engine went away (until it answers again; the sessions it cut were
        released), or shards cannot be published (until one is)."""
        return self.paused_since is not None or self.shards_failing is not None

    async def wait_idle(self, timeout_s: float | None = None) -> None:
        await self.pools.wait_idle(timeout_s)

    async def drain(self, grace_s: float | None = None) -> None:
        """Stop taking work, finish or cut in-flight sessions within ``grace_s``, commit the shard."""
        if self._drained:
            return
        self._drained = True
        grace = self.config.gateway.drain_grace_s if grace_s is None else grace_s
        log.info("gateway rank %d draining (%d in flight, grace %.0fs)", self.rank, self.in_flight, grace)
        await self.pools.drain(grace)
        await self.commit()

    async def commit(self) -> Path | None:
        """Publish what is buffered now; a failed publish keeps it buffered and pauses the rank (None)."""
        async with self._write_lock:
            try:
                path = await asyncio.to_thread(self.writer.commit)
            except Exception as err:
                self._shards_failed(err)
                return None
            self._shards_ok()
            return path

    async def close(self) -> None:
        """Drain (if not yet), commit, stop the proxy and the engine client. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._pools is not None:
                await self.drain()
        finally:
            for task in (self._poller, self._refresher, self._prober):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            if self._writer is not None:
                async with self._write_lock:
                    await asyncio.to_thread(self._writer.close)
            if self._proxy is not None:
                await self._proxy.stop()
            if self._engine is not None:
                await self._engine.close()
            if self._socket_dir is not None:
                shutil.rmtree(self._socket_dir, ignore_errors=True)

    # -- callbacks --------------------------------------------------------------------------------------------
    def _status(self, session_id: str, stage: Stage) -> None:
        if self.on_status is not None:
            self.on_status(session_id, stage)

    async def _sink(self, result: SessionResult) -> None:
        self.results_done += 1
        if self.on_done is not None:
            try:
                self.on_done(result)
            except Exception:
                log.exception("on_done callback failed for %s", result.key)
        async with self._write_lock:
            try:
                await asyncio.to_thread(self.writer.add, result)
            except Exception as err:
                if not self.writer.holds(result.key):
                    raise
                self._shards_failed(err)  # buffered: it goes out with the next shard that can be published

    def _shards_failed(self, err: BaseException) -> None:
        why = f"{type(err).__name__}: {err}"[:300]
        if self.shards_failing is None:
            log.error("rank %d: cannot publish shards under %s (%s); taking no sessions until one is published "
                      "(%d sessions held)", self.rank, RunDir(self.run_dir).shards, why, self.writer.buffered_sessions)
            me = component_name("gateway", self.rank)
            write_wait(self.run_dir, WaitRecord(
                component=me, waiting_for=[str(RunDir(self.run_dir).shards)],
                detail=f"paused, cannot publish shards ({why}), 0 min", since=time.time(), updated=time.time()))
        self.shards_failing = why

    def _shards_ok(self) -> None:
        if self.shards_failing is not None:
            log.info("rank %d: shards publish again; taking sessions", self.rank)
            self.shards_failing = None
            clear_wait(self.run_dir, component_name("gateway", self.rank))

    async def _set_aside(self, result: SessionResult) -> None:
        """A released attempt's partial result: ``released/rank-N/<session>.json``, with where and when."""
        released = result.released = msgspec.structs.replace(
            result.released or Released(reason="", rank=self.rank), host=socket.gethostname(), at=time.time(),
            polar_hpc=__version__)
        sid = str(result.id)
        path = RunDir(self.run_dir).released(self.rank) / f"{unique_name(sid)}.json"

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, to_json(result))

        await asyncio.to_thread(write)
        if not released.draining:
            self._engine_gone(released.reason)

    def _engine_gone(self, why: str) -> None:
        if self.paused_since is not None or self._engine is None or self._closed:
            return
        self.paused_since = time.time()
        log.warning("rank %d: pausing until an inference server answers again (%s)", self.rank, why)
        self._prober = asyncio.create_task(self._await_engine(why), name=f"rank{self.rank}:engine-probe")

    async def _await_engine(self, why: str) -> None:
        """Say in ``waits/`` that the rank waits for its engine, until one of its servers is healthy again."""
        assert self._engine is not None and self.paused_since is not None
        me = component_name("gateway", self.rank)
        servers = [component_name("inference", i) for i in range(self.config.inference.num_servers)]
        watch = JobWatch(self.run_dir)
        try:
            while True:
                minutes = (time.time() - self.paused_since) / 60
                jobs = await asyncio.to_thread(self._server_jobs, watch, servers)
                record = WaitRecord(component=me, waiting_for=servers,
                                    detail=f"paused, waiting for {', '.join(servers)} to answer again "
                                           f"({jobs}{why[:200]}), {minutes:.0f} min", since=self.paused_since,
                                    updated=time.time())
                await asyncio.to_thread(write_wait, self.run_dir, record)
                if any((await self._engine.health(timeout_s=ENGINE_PROBE_S * 5)).values()):
                    break
                await asyncio.sleep(ENGINE_PROBE_S)
        finally:
            await asyncio.to_thread(clear_wait, self.run_dir, me)
        log.info("rank %d: the inference servers answer again after %.0fs; taking sessions", self.rank,
                 time.time() - self.paused_since)
        self.paused_since = None

    def _server_jobs(self, watch: JobWatch, servers: list[str]) -> str:
        """``inference-0: job 12 PENDING (BeginTime); `` (a requeued job waits in the queue); a job that ended
        for good says who submits it again: on Slurm the run's monitor (the coordinator's job, up to its budget),
        else ``polar-hpc resume``."""
        watch.refresh(servers)
        said = ""
        for name in servers:
            info = watch.info(name)
            if info is not None:
                said += f"{name}: {info.describe()}"
                again = ("the run's monitor submits it again (up to its budget)" if watch.backend(name) == "slurm"
                         else f"polar-hpc resume {self.run_dir} submits it again")
                said += "; " if info.live else f", {again}; "
        return said

    def _committed(self, path: Path, keys: list[str]) -> None:
        if self.on_commit is not None:
            self.on_commit(path, keys)

    async def _refresh_endpoints(self) -> None:
        """Inference servers that were requeued or restarted publish new endpoints: follow them."""
        while True:
            await asyncio.sleep(ENDPOINT_POLL_S)
            found = await asyncio.to_thread(read_endpoints, self.run_dir, component_prefix("inference"))
            if found and self._engine is not None and self._engine.pool.set_urls([e.url for e in found]):
                log.info("rank %d: inference servers now %s", self.rank, ", ".join(e.url for e in found))

    async def _poll_shards(self) -> None:
        while True:
            await asyncio.sleep(SHARD_POLL_S)
            if self._writer is not None and (self._writer.due() or self.shards_failing is not None):
                async with self._write_lock:
                    try:
                        await asyncio.to_thread(self._writer.commit if self.shards_failing else self._writer.poll)
                    except Exception as err:
                        self._shards_failed(err)
                    else:
                        if self._writer.buffered_sessions == 0:
                            self._shards_ok()
