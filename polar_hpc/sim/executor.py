"""A simulated :class:`SessionExecutor`: each stage sleeps for a chosen duration (or raises), on the loop's clock.

With :mod:`polar_hpc.sim.clock` this runs the real pool code under virtual time: the pool tests and
``tools/bench/bench_pools.py`` use it. It starts no sandbox; it records what the pools asked of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import msgspec

from polar_hpc.gateway.stages import AgentOutcome, SessionJob
from polar_hpc.wire.traces import EvalResult, TraceStatus, Trajectory

Duration = Callable[[SessionJob], float]


class SimulatedCrash(RuntimeError):
    """Raised by a step told to fail."""


class Interval(msgspec.Struct, frozen=True):
    session_id: str
    step: str
    start: float
    end: float


class SimulatedExecutor:
    """Steps: start, prepare, prewarm, run, build, evaluate, teardown (durations in loop seconds)."""

    def __init__(
        self,
        durations: Mapping[str, float | Duration] | None = None,
        *,
        fail: Mapping[str, Callable[[SessionJob], bool]] | None = None,
        prewarm: bool = False,
        run_outcome: Callable[[SessionJob], AgentOutcome] | None = None,
    ) -> None:
        self.durations: dict[str, float | Duration] = dict(durations or {})
        self.fail: dict[str, Callable[[SessionJob], bool]] = dict(fail or {})
        self.prewarm_enabled = prewarm
        self.run_outcome = run_outcome
        self.intervals: list[Interval] = []
        self.torn_down: list[str] = []
        self.started: list[str] = []
        self.max_concurrent: dict[str, int] = {}
        self._active: dict[str, int] = {}

    def _duration(self, step: str, job: SessionJob) -> float:
        d = self.durations.get(step, 0.0)
        return d(job) if callable(d) else float(d)

    async def _step(self, step: str, job: SessionJob) -> None:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        self._active[step] = self._active.get(step, 0) + 1
        self.max_concurrent[step] = max(self.max_concurrent.get(step, 0), self._active[step])
        try:
            await asyncio.sleep(self._duration(step, job))
            check = self.fail.get(step)
            if check is not None and check(job):
                raise SimulatedCrash(f"simulated {step} failure for {job.session_id}")
        finally:
            self._active[step] -= 1
            self.intervals.append(Interval(job.session_id, step, t0, loop.time()))

    async def start(self, job: SessionJob) -> None:
        self.started.append(job.session_id)
        await self._step("start", job)

    async def prepare(self, job: SessionJob) -> None:
        await self._step("prepare", job)

    def wants_prewarm(self, job: SessionJob) -> bool:
        return self.prewarm_enabled

    async def prewarm(self, job: SessionJob) -> None:
        await self._step("prewarm", job)

    async def run(self, job: SessionJob, budget_s: float) -> AgentOutcome:
        await self._step("run", job)
        return self.run_outcome(job) if self.run_outcome else AgentOutcome(status="completed", returncode=0)

    async def build(self, job: SessionJob, status: TraceStatus) -> Trajectory:
        await self._step("build", job)
        return Trajectory(status=status)

    async def evaluate(self, job: SessionJob, trajectory: Trajectory) -> EvalResult | None:
        await self._step("evaluate", job)
        return EvalResult(outcome_reward=1.0 if trajectory.status is TraceStatus.COMPLETED else 0.0)

    async def teardown(self, job: SessionJob) -> None:
        self.torn_down.append(job.session_id)
        await self._step("teardown", job)

    def busy_time(self, step: str, since: float = 0.0, until: float = float("inf")) -> float:
        """Total time spent in ``step`` within [since, until] (summed over sessions)."""
        total = 0.0
        for iv in self.intervals:
            if iv.step == step:
                total += max(0.0, min(iv.end, until) - max(iv.start, since))
        return total
