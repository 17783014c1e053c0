"""Stage pools: INIT → READY → RUN → POSTRUN, each bounded, so slow sandbox preparation never idles RUN slots.

Each session is one task that takes a slot of each stage in turn (FIFO semaphores):

- INIT (``init_pool``): ``start`` under the start gate (``start_gate`` concurrent starts), then ``prepare``.
  The session budget starts here. A failure or timeout skips RUN.
- READY (``ready_buffer``): a started sandbox waits for a RUN slot. It takes its READY slot before giving back
  its INIT slot, so at most ``ready_buffer`` started sandboxes wait.
- RUN (``run_pool``): the harness, under ``min(agent budget, rest of the session budget)``. Running out of
  budget cancels the harness and records an agent ``timeout``: POSTRUN still builds the partial trajectory.
  A harness cut by the system instead (a drain's cutoff before the session's own budget ran out) is no outcome:
  the session is RELEASED (it runs again), its partial trajectory handed to ``on_released``, never to the sink.
- POSTRUN (``postrun_pool``): build → evaluate → teardown → sink (shard write + report). POSTRUN has its own
  bounds, not the session budget (which may be spent), so a timed-out session still yields its trajectory.

Teardown always runs, exactly once, also on cancellation and crashes; it runs before the result is reported so
a reported session holds nothing. Time is the event loop's (a :mod:`polar_hpc.sim.clock` loop simulates it).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from polar_hpc.config.run import GatewayConfig
from polar_hpc.gateway.assemble import BUILD_TIMEOUT_S, build_and_evaluate, session_result
from polar_hpc.gateway.stages import FINAL_STAGES, AgentOutcome, SessionExecutor, SessionJob, Stage, timed
from polar_hpc.log import get_logger
from polar_hpc.postrun.session import fidelity_checked
from polar_hpc.wire.resolved import ResolvedSession
from polar_hpc.wire.results import Released, SessionResult
from polar_hpc.wire.traces import TraceStatus, Trajectory

log = get_logger("gateway.pools")

TEARDOWN_TIMEOUT_S = 120.0
STOP_SIGNALS = frozenset({-signal.SIGTERM, -signal.SIGKILL, 128 + signal.SIGTERM, 128 + signal.SIGKILL})
"""A harness's exit status when a signal for the whole job killed it (a plain ``scancel``, a node shutting down:
Slurm signals every process of the step, the sandboxes included)."""
STOP_NOTICE_S = 1.0
"""How long a harness killed by such a signal waits for the rank's own SIGTERM (its drain) to be seen, the two
arriving together: killed while the rank stops, the attempt is the system's cut (released), not an outcome."""

ResultSink = Callable[[SessionResult], Awaitable[None]]
StatusCallback = Callable[[str, Stage], None]


class DrainingError(RuntimeError):
    """``submit`` after ``drain`` started."""


class _Slots:
    def __init__(self, n: int) -> None:
        self.sem = asyncio.Semaphore(n) if n > 0 else None
        self.size = n


class StagePools:
    def __init__(
        self,
        config: GatewayConfig,
        executor: SessionExecutor,
        sink: ResultSink,
        *,
        on_status: StatusCallback | None = None,
        on_released: ResultSink | None = None,
        rank: int = -1,
        model: str = "",
    ) -> None:
        for name in ("init_pool", "run_pool", "postrun_pool", "start_gate"):
            if getattr(config, name) < 1:
                raise ValueError(f"gateway.{name} must be >= 1, got {getattr(config, name)}")
        if config.ready_buffer < 0:
            raise ValueError(f"gateway.ready_buffer must be >= 0, got {config.ready_buffer}")
        self.config = config
        self.executor = executor
        self.sink = sink
        self.on_status = on_status
        self.on_released = on_released
        """Gets the partial result of each released session (set aside with its provenance, never trained on)."""
        self.rank = rank
        self.model = model
        self._init = _Slots(config.init_pool)
        self._ready = _Slots(config.ready_buffer)
        self._run = _Slots(config.run_pool)
        self._postrun = _Slots(config.postrun_pool)
        self._gate = asyncio.Semaphore(config.start_gate)
        self.jobs: dict[str, SessionJob] = {}
        self._teardowns: set[asyncio.Task[None]] = set()
        self._draining = False
        self._run_cutoff = math.inf

    # -- public ---------------------------------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Sessions this rank can hold before they queue: INIT + READY + RUN slots."""
        return self.config.init_pool + self.config.ready_buffer + self.config.run_pool

    def occupancy(self) -> dict[str, int]:
        counts = {s.value: 0 for s in Stage if s not in FINAL_STAGES}
        for job in self.jobs.values():
            if job.stage.value in counts:
                counts[job.stage.value] += 1
        return counts

    @property
    def free_slots(self) -> int:
        occ = self.occupancy()
        busy = occ["queued"] + occ["init"] + occ["ready"] + occ["run"]
        return 0 if self._draining else max(0, self.capacity - busy)

    @property
    def draining(self) -> bool:
        return self._draining

    def submit(self, session: ResolvedSession) -> SessionJob:
        if self._draining:
            raise DrainingError(f"rank {self.rank} is draining; refused session {session.session_id}")
        sid = session.session_id
        if sid in self.jobs:
            raise ValueError(f"session {sid} is already in this rank (stage {self.jobs[sid].stage})")
        job = SessionJob(session, self._now())
        self.jobs[sid] = job
        job.task = asyncio.create_task(self._lifecycle(job), name=f"session:{sid}")
        job.task.add_done_callback(lambda _: self._forget(job))
        self._status(job, Stage.QUEUED)
        return job

    def _forget(self, job: SessionJob) -> None:
        # A task cancelled before its first step never entered _lifecycle: nothing started, nothing to tear down.
        if job.stage not in FINAL_STAGES:
            self._status(job, Stage.CANCELLED)
        self.jobs.pop(job.session_id, None)

    async def cancel(self, session_id: str) -> bool:
        """Cancel a session at whatever stage; returns after its teardown. No result is reported."""
        job = self.jobs.get(session_id)
        if job is None or job.task is None:
            return False
        job.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await job.task
        if job.teardown_task is not None:
            await asyncio.wait([job.teardown_task], timeout=TEARDOWN_TIMEOUT_S)
        return True

    async def wait_idle(self, timeout_s: float | None = None) -> None:
        tasks = [j.task for j in self.jobs.values() if j.task is not None]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)

    async def drain(self, grace_s: float) -> None:
        """Stop taking work; cancel sessions not yet running; let running ones finish until 3/4 of the grace,
        then cut their harness (the session is released: no outcome, its partial trajectory set aside); cancel
        what is left at the end of the grace."""
        self._draining = True
        start = self._now()
        self._run_cutoff = start + 0.75 * grace_s
        for job in list(self.jobs.values()):
            if job.stage in (Stage.QUEUED, Stage.INIT, Stage.READY) and job.task is not None:
                job.task.cancel()
            elif job.stage is Stage.RUN and job.run_timeout is not None:
                when = job.run_timeout.when()
                job.run_timeout.reschedule(self._run_cutoff if when is None else min(when, self._run_cutoff))
        await self.wait_idle(max(0.0, start + grace_s - self._now()))
        left = [j.task for j in self.jobs.values() if j.task is not None and not j.task.done()]
        for task in left:
            task.cancel()
        if left:
            log.warning("drain: %d session(s) still running after %.0fs grace; cancelled", len(left), grace_s)
            await asyncio.wait(left, timeout=TEARDOWN_TIMEOUT_S)
        await self.close()

    async def close(self) -> None:
        """Wait (bounded) for background teardowns of cancelled sessions."""
        if self._teardowns:
            await asyncio.wait(set(self._teardowns), timeout=TEARDOWN_TIMEOUT_S)

    # -- lifecycle ------------------------------------------------------------------------------------------
    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def _status(self, job: SessionJob, stage: Stage) -> None:
        job.stage = stage
        if self.on_status is not None:
            try:
                self.on_status(job.session_id, stage)
            except Exception:
                log.exception("on_status callback failed for %s", job.session_id)

    async def _lifecycle(self, job: SessionJob) -> None:
        try:
            ready_sem = await self._stage_init(job)
            if job.failure is None:
                await self._stage_ready_run(job, ready_sem)
            elif ready_sem is not None:
                ready_sem.release()
            if job.released is not None:
                job.aside_task = self._background(job, self._set_aside(job), "set-aside")
                await asyncio.shield(job.aside_task)
                self._status(job, Stage.RELEASED)
                return
            await self._stage_postrun(job)
            self._status(job, Stage.DONE)
        except asyncio.CancelledError:
            self._status(job, Stage.CANCELLED)
            log.info("session %s cancelled", job.session_id)
            raise
        except Exception:
            log.exception("session %s: pool error", job.session_id)
            self._status(job, Stage.CANCELLED)
        finally:
            await self._teardown(job)

    async def _stage_init(self, job: SessionJob) -> asyncio.Semaphore | None:
        """Returns the READY semaphore if one was taken (released when a RUN slot is taken)."""
        sem = self._init.sem
        assert sem is not None
        async with sem:
            t0 = self._now()
            job.timings["queue"] = t0 - job.submitted_at
            session_budget = job.session.task.timeout_s
            job.deadline = t0 + session_budget
            self._status(job, Stage.INIT)
            try:
                async with asyncio.timeout_at(job.deadline):
                    async with self._gate:
                        with timed(job, "start"):
                            await self.executor.start(job)
                    with timed(job, "prepare"):
                        await self.executor.prepare(job)
            except TimeoutError:
                job.failure = (TraceStatus.TIMEOUT, f"session budget {session_budget:.0f}s spent in INIT")
            except Exception as err:
                job.failure = (TraceStatus.ERROR, f"INIT failed: {err!r}")
            job.timings["init"] = self._now() - t0
            if job.failure is not None or self._ready.sem is None:
                return None
            try:
                with timed(job, "ready_wait"):
                    async with asyncio.timeout_at(job.deadline):
                        await self._ready.sem.acquire()
            except TimeoutError:
                job.failure = (TraceStatus.TIMEOUT, "session budget spent waiting for a READY slot")
                return None
            self._status(job, Stage.READY)
            return self._ready.sem

    async def _stage_ready_run(self, job: SessionJob, ready_sem: asyncio.Semaphore | None) -> None:
        run_sem = self._run.sem
        assert run_sem is not None
        if job.stage is not Stage.READY:
            self._status(job, Stage.READY)
        try:
            with timed(job, "ready_wait"):
                async with asyncio.timeout_at(job.deadline):
                    await run_sem.acquire()
        except TimeoutError:
            job.failure = (TraceStatus.TIMEOUT, "session budget spent waiting for a RUN slot")
            return
        finally:
            if ready_sem is not None:
                ready_sem.release()
        try:
            self._status(job, Stage.RUN)
            if self.executor.wants_prewarm(job):
                job.prewarm = asyncio.create_task(self._prewarm(job), name=f"prewarm:{job.session_id}")
            now = self._now()
            own_budget = job.session.task.agent_timeout_s
            agent_budget = self.config.agent_timeout_s if own_budget is None else own_budget
            own = min(agent_budget, job.deadline - now)
            job.own_deadline = now + own
            budget = min(own, self._run_cutoff - now)
            which = "agent" if own >= agent_budget else "session"
            with timed(job, "run"):
                job.agent = await self._run_harness(job, max(0.0, budget), which)
            if job.agent.status == "timeout" and self._draining and self._now() < job.own_deadline:
                job.released = f"cut by a drain after {self._now() - now:.0f}s of RUN"
            elif job.agent.returncode in STOP_SIGNALS and await self._stopping():
                job.released = (f"harness killed (exit {job.agent.returncode}) while the rank stops: its job was "
                                "cancelled or its node is going down")
        finally:
            run_sem.release()

    async def _stopping(self) -> bool:
        """The rank drains, or starts to within :data:`STOP_NOTICE_S` (its SIGTERM came with the harness's)."""
        for _ in range(int(STOP_NOTICE_S / 0.05)):
            if self._draining:
                return True
            await asyncio.sleep(0.05)
        return self._draining

    async def _run_harness(self, job: SessionJob, budget: float, which: str) -> AgentOutcome:
        if budget <= 0:
            return AgentOutcome(status="timeout", detail=f"{which} budget spent before RUN")
        try:
            async with asyncio.timeout(budget) as cm:
                job.run_timeout = cm
                return await self.executor.run(job, budget)
        except TimeoutError:
            return AgentOutcome(status="timeout", detail=f"{which} budget {budget:.0f}s spent")
        except Exception as err:
            log.warning("session %s: harness run failed: %r", job.session_id, err)
            return AgentOutcome(status="error", detail=f"RUN failed: {err!r}")
        finally:
            job.run_timeout = None

    async def _prewarm(self, job: SessionJob) -> None:
        with timed(job, "prewarm"):
            try:
                await self.executor.prewarm(job)
            except Exception as err:
                log.warning("session %s: evaluator runtime prewarm failed: %r", job.session_id, err)

    async def _stage_postrun(self, job: SessionJob) -> None:
        sem = self._postrun.sem
        assert sem is not None
        with timed(job, "postrun_wait"):
            await sem.acquire()
        try:
            self._status(job, Stage.POSTRUN)
            try:
                trajectory, evaluation = await build_and_evaluate(self.executor, job)
            finally:
                await self._teardown(job)
            result = session_result(job, trajectory, evaluation, model=self.model, rank=self.rank)
            await self.sink(fidelity_checked(result))
        finally:
            sem.release()

    async def _set_aside(self, job: SessionJob) -> None:
        """Build what the released session recorded and hand it to ``on_released`` (bounded; failures logged)."""
        log.info("session %s released: %s", job.session_id, job.released)
        if self.on_released is None:
            return
        try:
            async with asyncio.timeout(BUILD_TIMEOUT_S):
                trajectory = await self.executor.build(job, TraceStatus.TIMEOUT)
        except Exception as err:
            log.warning("session %s: building the released attempt failed: %r", job.session_id, err)
            trajectory = Trajectory(status=TraceStatus.TIMEOUT)
        trajectory.error = f"released: {job.released}"
        result = session_result(job, trajectory, None, model=self.model, rank=self.rank)
        result.released = Released(reason=str(job.released), rank=self.rank, draining=self._draining)
        try:
            await self.on_released(result)
        except Exception as err:
            log.warning("session %s: setting the released attempt aside failed: %r", job.session_id, err)

    async def _teardown(self, job: SessionJob) -> None:
        if job.torn_down:
            return
        job.torn_down = True
        if "queue" not in job.timings:
            return  # never reached INIT: nothing was started
        job.teardown_task = self._background(job, self._do_teardown(job), "teardown")
        await asyncio.shield(job.teardown_task)

    def _background(self, job: SessionJob, step: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """``step`` as a task that runs to its end even if the session's task is cancelled (a drain's grace
        ending): the sandbox's teardown, and setting a released attempt aside before it. ``close`` waits for it."""
        task = asyncio.create_task(step, name=f"{name}:{job.session_id}")
        self._teardowns.add(task)
        task.add_done_callback(self._teardowns.discard)
        return task

    async def _do_teardown(self, job: SessionJob) -> None:
        t0 = self._now()
        if job.aside_task is not None and not job.aside_task.done():
            await asyncio.wait([job.aside_task], timeout=BUILD_TIMEOUT_S)  # it reads what the sandbox recorded
        if job.prewarm is not None and not job.prewarm.done():
            job.prewarm.cancel()
            await asyncio.wait([job.prewarm], timeout=TEARDOWN_TIMEOUT_S)
        try:
            async with asyncio.timeout(TEARDOWN_TIMEOUT_S):
                await self.executor.teardown(job)
        except Exception:
            log.exception("session %s: teardown failed", job.session_id)
        job.timings["teardown"] = self._now() - t0
