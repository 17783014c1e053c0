"""Stage pools under a simulated clock (virtual-time event loop): ordering, budgets, teardown, cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import numpy as np
import pytest

from polar_hpc.config.run import EvaluatorSpec, GatewayConfig, RunConfig
from polar_hpc.gateway.pools import DrainingError, StagePools
from polar_hpc.gateway.stages import AgentOutcome, SessionJob, Stage
from polar_hpc.sim.clock import run_simulated
from polar_hpc.sim.executor import SimulatedExecutor
from polar_hpc.wire.resolved import resolve_session
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.session import Session, Task
from polar_hpc.wire.traces import EvalResult, Trace, TraceStatus, Trajectory
from tests.fixtures.waits import async_wait_for


def session(i: int, **task_kw: Any) -> Session:
    return Session(task=Task(task_id=f"t{i}", instruction="do it", **task_kw), sample_index=0)


class Harness:
    def __init__(self, executor: SimulatedExecutor, **config: Any) -> None:
        self.results: list[SessionResult] = []
        self.statuses: list[tuple[str, Stage]] = []
        self.executor = executor

        self.released: list[SessionResult] = []

        async def sink(result: SessionResult) -> None:
            self.results.append(result)

        async def aside(result: SessionResult) -> None:
            self.released.append(result)

        self.pools = StagePools(GatewayConfig(**config), executor, sink,
                                on_status=lambda sid, st: self.statuses.append((sid, st)), on_released=aside,
                                rank=3)

    def submit(self, s: Session) -> SessionJob:
        """Submit as the rank does: the task resolved against a recipe with these pools' gateway config."""
        return self.pools.submit(resolve_session(s, RunConfig(gateway=self.pools.config)))

    def by_task(self) -> dict[str, SessionResult]:
        return {r.task_id: r for r in self.results}


def sim(fn: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    return run_simulated(fn())


def now() -> float:
    return asyncio.get_running_loop().time()


def test_run_slots_stay_busy_while_init_is_slow() -> None:
    ex = SimulatedExecutor({"start": 10, "prepare": 30, "run": 20, "teardown": 1})
    h = Harness(ex, init_pool=4, ready_buffer=2, run_pool=2, postrun_pool=2)

    async def main() -> None:
        for i in range(20):
            h.submit(session(i))
        await h.pools.wait_idle()

    sim(main)
    runs = sorted((iv for iv in ex.intervals if iv.step == "run"), key=lambda iv: iv.start)
    first, last = runs[0].start, max(iv.end for iv in runs)
    # From the first harness start on, both RUN slots are never idle: INIT keeps READY stocked.
    assert ex.busy_time("run", first, last) == pytest.approx(2 * (last - first))
    assert ex.max_concurrent["run"] == 2
    assert ex.max_concurrent["start"] <= 2  # start gate
    assert len(h.results) == 20 and all(r.trajectory.status is TraceStatus.COMPLETED for r in h.results)
    assert sorted(ex.torn_down) == sorted(f"t{i}/0#0" for i in range(20))
    assert any(r.timings["ready_wait"] > 0 for r in h.results)


def test_ready_buffer_bounds_started_sandboxes() -> None:
    ex = SimulatedExecutor({"start": 1, "run": 50})
    h = Harness(ex, init_pool=4, ready_buffer=1, run_pool=1, postrun_pool=1)
    seen: list[int] = []

    async def main() -> None:
        for i in range(8):
            h.submit(session(i))
        while h.pools.jobs:
            seen.append(h.pools.occupancy()["ready"])
            await asyncio.sleep(1)

    sim(main)
    assert max(seen) == 1
    assert len(h.results) == 8


def test_start_gate_limits_concurrent_starts() -> None:
    ex = SimulatedExecutor({"start": 5, "prepare": 20, "run": 1})
    h = Harness(ex, init_pool=8, start_gate=3, run_pool=8, ready_buffer=0)

    async def main() -> None:
        for i in range(16):
            h.submit(session(i))
        await h.pools.wait_idle()

    sim(main)
    assert ex.max_concurrent["start"] == 3
    assert ex.max_concurrent["prepare"] > 3


def test_agent_timeout_builds_partial_trajectory() -> None:
    ex = SimulatedExecutor({"start": 5, "run": 1000, "build": 2, "evaluate": 3})
    h = Harness(ex, agent_timeout_s=100, session_timeout_s=1000)

    async def main() -> None:
        h.submit(session(0))
        await h.pools.wait_idle()

    sim(main)
    (r,) = h.results
    assert r.trajectory.status is TraceStatus.TIMEOUT
    assert r.timings["run"] == pytest.approx(100)
    assert "build" in r.timings and r.evaluation is not None
    assert r.agent.status == "timeout"
    assert "agent budget" in (r.trajectory.error or "")
    assert r.gateway_rank == 3


def test_session_budget_cuts_run_when_smaller() -> None:
    ex = SimulatedExecutor({"start": 20, "run": 1000})
    h = Harness(ex, agent_timeout_s=500, session_timeout_s=60)

    async def main() -> None:
        h.submit(session(0))
        h.submit(session(1, timeout_s=1000.0))  # the task's own budget wins
        await h.pools.wait_idle()

    sim(main)
    r0, r1 = h.by_task()["t0"], h.by_task()["t1"]
    assert r0.trajectory.status is TraceStatus.TIMEOUT and r0.timings["run"] == pytest.approx(40)
    assert "session budget" in (r0.trajectory.error or "")
    assert r1.timings["run"] == pytest.approx(500)


def test_the_tasks_own_agent_budget_wins() -> None:
    ex = SimulatedExecutor({"start": 5, "run": 1000})
    h = Harness(ex, agent_timeout_s=100, session_timeout_s=2000)

    async def main() -> None:
        h.submit(session(0))
        h.submit(session(1, agent_timeout_s=300.0))  # a Harbor task's [agent] timeout_sec
        await h.pools.wait_idle()

    sim(main)
    r0, r1 = h.by_task()["t0"], h.by_task()["t1"]
    assert r0.timings["run"] == pytest.approx(100) and r1.timings["run"] == pytest.approx(300)
    assert "agent budget 300s spent" in (r1.trajectory.error or "")


def test_session_timeout_in_init_skips_run_but_tears_down() -> None:
    ex = SimulatedExecutor({"start": 5, "prepare": 1000})
    h = Harness(ex, session_timeout_s=100)

    async def main() -> None:
        h.submit(session(0))
        await h.pools.wait_idle()

    sim(main)
    (r,) = h.results
    assert r.trajectory.status is TraceStatus.TIMEOUT and "INIT" in (r.trajectory.error or "")
    assert not any(iv.step in ("run", "build", "evaluate") for iv in ex.intervals)
    assert ex.torn_down == ["t0/0#0"]


def test_harness_failure_is_error_but_still_built_and_evaluated() -> None:
    ex = SimulatedExecutor({"run": 3}, run_outcome=lambda job: AgentOutcome(status="failed", returncode=2))
    h = Harness(ex)

    async def main() -> None:
        h.submit(session(0))
        await h.pools.wait_idle()

    sim(main)
    (r,) = h.results
    assert r.trajectory.status is TraceStatus.ERROR
    assert r.evaluation is not None and r.agent.returncode == 2


@pytest.mark.parametrize(
    ("step", "status"),
    [("start", TraceStatus.ERROR), ("prepare", TraceStatus.ERROR), ("prewarm", TraceStatus.COMPLETED),
     ("run", TraceStatus.ERROR), ("build", TraceStatus.ERROR), ("evaluate", TraceStatus.ERROR),
     ("teardown", TraceStatus.COMPLETED)],
)
def test_crash_in_any_stage_still_tears_down_and_reports(step: str, status: TraceStatus) -> None:
    ex = SimulatedExecutor({"start": 1, "prepare": 1, "prewarm": 1, "run": 5, "build": 1, "evaluate": 1},
                           fail={step: lambda job: job.session.task.task_id == "t1"}, prewarm=True)
    h = Harness(ex, init_pool=2, run_pool=2)

    async def main() -> None:
        for i in range(3):
            h.submit(session(i))
        await h.pools.wait_idle()

    sim(main)
    assert sorted(ex.torn_down) == ["t0/0#0", "t1/0#0", "t2/0#0"]
    results = h.by_task()
    assert set(results) == {"t0", "t1", "t2"}
    assert results["t1"].trajectory.status is status
    assert results["t0"].trajectory.status is TraceStatus.COMPLETED
    assert not h.pools.jobs


def test_sink_failure_still_tears_down() -> None:
    ex = SimulatedExecutor({"run": 1})
    pools: StagePools

    async def sink(result: SessionResult) -> None:
        raise OSError("disk full")

    async def main() -> None:
        nonlocal pools
        pools = StagePools(GatewayConfig(), ex, sink)
        pools.submit(resolve_session(session(0), RunConfig()))
        await pools.wait_idle()

    sim(main)
    assert ex.torn_down == ["t0/0#0"]


@pytest.mark.parametrize("stage", [Stage.QUEUED, Stage.INIT, Stage.READY, Stage.RUN, Stage.POSTRUN])
def test_cancel_at_any_stage_tears_down_without_result(stage: Stage) -> None:
    ex = SimulatedExecutor({"start": 10, "prepare": 10, "run": 100, "build": 10, "evaluate": 10, "teardown": 2})
    h = Harness(ex, init_pool=1, ready_buffer=1, run_pool=1, postrun_pool=1)
    victim = {Stage.QUEUED: 3, Stage.INIT: 2, Stage.READY: 1, Stage.RUN: 0, Stage.POSTRUN: 0}[stage]

    async def main() -> None:
        jobs = [h.submit(session(i)) for i in range(4)]
        await async_wait_for(lambda: jobs[victim].stage is stage, 60, f"job {victim} to reach {stage.name}",
                             interval_s=0.5)  # simulated seconds between polls; the deadline is real time
        assert await h.pools.cancel(jobs[victim].session_id)
        await h.pools.wait_idle()

    sim(main)
    vid = f"t{victim}/0#0"
    assert (vid, Stage.CANCELLED) in h.statuses
    assert vid not in {f"{r.task_id}/0#0" for r in h.results}
    assert len(h.results) == 3
    started = vid in ex.started
    assert ex.torn_down.count(vid) == 1 or (not started and stage is Stage.QUEUED)
    assert sorted(set(ex.torn_down)) == sorted(ex.torn_down)


def test_prewarm_overlaps_run_and_finishes_before_evaluate() -> None:
    ex = SimulatedExecutor({"run": 50, "prewarm": 30, "build": 1, "evaluate": 5}, prewarm=True)
    h = Harness(ex)

    async def main() -> None:
        h.submit(session(0, evaluator=EvaluatorSpec(name="command", fresh_runtime=True)))
        await h.pools.wait_idle()

    sim(main)
    iv = {i.step: i for i in ex.intervals}
    assert iv["prewarm"].start == iv["run"].start
    assert iv["prewarm"].end <= iv["evaluate"].start
    assert h.results[0].timings["prewarm"] == pytest.approx(30)


def test_statuses_in_order() -> None:
    ex = SimulatedExecutor({"start": 1, "run": 1})
    h = Harness(ex)

    async def main() -> None:
        h.submit(session(0))
        await h.pools.wait_idle()

    sim(main)
    assert [s for _, s in h.statuses] == [Stage.QUEUED, Stage.INIT, Stage.READY, Stage.RUN, Stage.POSTRUN,
                                         Stage.DONE]
    assert h.results[0].timings.keys() >= {"queue", "start", "prepare", "init", "ready_wait", "run", "build",
                                           "evaluate", "teardown", "total"}


def test_drain_cuts_running_and_cancels_waiting() -> None:
    ex = SimulatedExecutor({"start": 10, "run": 1000, "build": 1})
    h = Harness(ex, init_pool=2, ready_buffer=1, run_pool=1, postrun_pool=1, agent_timeout_s=5000)
    t_drain = 0.0

    async def main() -> None:
        nonlocal t_drain
        jobs = [h.submit(session(i)) for i in range(5)]
        await async_wait_for(lambda: jobs[0].stage is Stage.RUN and jobs[1].stage is Stage.READY, 60,
                             "job 0 in RUN and job 1 in READY", interval_s=1)
        t_drain = now()
        await h.pools.drain(grace_s=100)
        with pytest.raises(DrainingError):
            h.submit(session(9))
        assert h.pools.free_slots == 0

    sim(main)
    assert h.results == [], "a session the drain cut has no outcome"
    (aside,) = h.released
    assert aside.task_id == "t0" and aside.attempt == 0 and "drain" in (aside.trajectory.error or "")
    assert aside.released.rank == 3 and "drain" in aside.released.reason
    assert [st for sid, st in h.statuses if sid == "t0/0#0"][-1] is Stage.RELEASED
    cancelled = {sid for sid, st in h.statuses if st is Stage.CANCELLED}
    assert cancelled == {f"t{i}/0#0" for i in range(1, 5)}
    assert sorted(ex.torn_down) == sorted(ex.started)


def test_a_released_attempt_is_set_aside_even_when_the_grace_ends_during_its_build() -> None:
    ex = SimulatedExecutor({"run": 1000, "build": 60})
    h = Harness(ex, agent_timeout_s=5000)

    async def main() -> None:
        job = h.submit(session(0))
        while job.stage is not Stage.RUN:
            await asyncio.sleep(1)
        await h.pools.drain(grace_s=100)  # cut at 75, build until 135: past the grace's end at 100

    sim(main)
    assert h.results == []
    (aside,) = h.released
    assert aside.task_id == "t0" and "drain" in aside.released.reason
    assert sorted(ex.torn_down) == sorted(ex.started)


def test_drain_keeps_the_outcome_of_a_session_whose_own_budget_ends_first() -> None:
    ex = SimulatedExecutor({"run": 1000, "build": 1})
    h = Harness(ex, agent_timeout_s=50)

    async def main() -> None:
        job = h.submit(session(0))
        await async_wait_for(lambda: job.stage is Stage.RUN, 60, "the job to reach RUN", interval_s=1)
        await h.pools.drain(grace_s=400)

    sim(main)
    (r,) = h.results
    assert r.trajectory.status is TraceStatus.TIMEOUT and "agent budget 50s" in (r.trajectory.error or "")
    assert h.released == []


def test_a_harness_killed_with_its_rank_by_a_job_signal_is_released_not_an_outcome() -> None:
    """A plain scancel (or a node going down) SIGTERMs the harness and the rank together: the harness's exit is
    seen first, the rank's drain a moment later; the attempt is the system's cut, never the harness's failure."""
    killed = AgentOutcome(status="failed", returncode=-15, detail="harness exited -15")
    ex = SimulatedExecutor({"run": 30, "build": 1}, run_outcome=lambda job: killed)
    h = Harness(ex, agent_timeout_s=5000)

    async def main() -> None:
        h.submit(session(0))
        await asyncio.sleep(30.2)  # the harness died at 30; the rank's SIGTERM handler runs now
        await h.pools.drain(grace_s=100)

    sim(main)
    assert h.results == []
    (aside,) = h.released
    assert "harness killed (exit -15) while the rank stops" in aside.released.reason


def test_a_harness_killed_while_its_rank_goes_on_is_the_harness_failure() -> None:
    killed = AgentOutcome(status="failed", returncode=-15, detail="harness exited -15")
    h = Harness(SimulatedExecutor({"run": 30, "build": 1}, run_outcome=lambda job: killed))

    async def main() -> None:
        h.submit(session(0))
        await h.pools.wait_idle()

    sim(main)
    (r,) = h.results
    assert r.trajectory.status is TraceStatus.ERROR or "-15" in (r.trajectory.error or ""), r.trajectory
    assert h.released == []


def test_bad_pool_sizes_are_refused() -> None:
    async def main() -> None:
        async def sink(result: SessionResult) -> None: ...

        with pytest.raises(ValueError, match="gateway.run_pool"):
            StagePools(GatewayConfig(run_pool=0), SimulatedExecutor(), sink)

    sim(main)


def test_duplicate_session_refused() -> None:
    async def main() -> None:
        h = Harness(SimulatedExecutor({"run": 1}))
        h.submit(session(0))
        with pytest.raises(ValueError, match="already"):
            h.submit(session(0))
        await h.pools.wait_idle()

    sim(main)


_ = SessionJob


class ProcessExecutor(SimulatedExecutor):
    """Each session owns real processes (a 'sandbox' and a 'harness'); teardown kills them by pid."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.procs: dict[str, list[asyncio.subprocess.Process]] = {}

    async def _spawn(self, job: SessionJob) -> None:
        proc = await asyncio.create_subprocess_exec("sleep", "300", start_new_session=True)
        self.procs.setdefault(job.session_id, []).append(proc)

    async def start(self, job: SessionJob) -> None:
        await self._spawn(job)
        await super().start(job)

    async def run(self, job: SessionJob, budget_s: float) -> AgentOutcome:
        await self._spawn(job)
        return await super().run(job, budget_s)

    async def teardown(self, job: SessionJob) -> None:
        await super().teardown(job)
        for proc in self.procs.pop(job.session_id, []):
            if proc.returncode is None:
                proc.kill()
            await asyncio.wait_for(proc.wait(), 10)


@pytest.mark.parametrize("step", ["start", "prepare", "run", "build", "evaluate", "cancel", "agent_timeout"])
async def test_no_processes_outlive_a_session(step: str, no_leaked_children: None) -> None:
    """Real loop, real processes: whatever breaks, the session's processes are gone from the process table."""
    fail = {} if step in ("cancel", "agent_timeout") else {step: lambda job: True}
    ex = ProcessExecutor(durations={"run": 30 if step in ("cancel", "agent_timeout") else 0.01},
                         fail=fail)
    h = Harness(ex, agent_timeout_s=0.2)
    job = h.submit(session(0))
    if step == "cancel":
        await async_wait_for(lambda: job.stage is Stage.RUN, 20, "the job to reach RUN")
        await h.pools.cancel(job.session_id)
    await asyncio.wait_for(h.pools.wait_idle(), 20)
    assert not ex.procs and ex.torn_down == ["t0/0#0"]
    assert len(h.results) == (0 if step == "cancel" else 1)


class FailedEvaluationExecutor(SimulatedExecutor):
    """The evaluator's runtime did not come up: ``evaluate_safely`` reports an evaluation error, not a score."""

    async def evaluate(self, job: SessionJob, trajectory: Trajectory) -> EvalResult | None:
        from polar_hpc.evaluate.base import EVALUATION_ERROR, apply_rewards, zero

        result = zero(EVALUATION_ERROR, error="PrepareError: prepare[0] 'x': exit 1")
        apply_rewards(trajectory, result)
        return result


def test_evaluation_infrastructure_error_makes_the_session_an_error() -> None:
    h = Harness(FailedEvaluationExecutor())

    async def main() -> None:
        h.submit(session(0))
        await h.pools.wait_idle()

    sim(main)
    (r,) = h.results
    assert r.trajectory.status is TraceStatus.ERROR
    assert "PrepareError" in (r.trajectory.error or "")
    assert r.evaluation is not None and r.evaluation.details["reason"] == "evaluation_error"


class CrashingEvaluationExecutor(SimulatedExecutor):
    """The evaluation call itself raises (not a result): evaluation still marks the traces, the gateway records."""

    async def build(self, job: SessionJob, status: TraceStatus) -> Trajectory:
        await super().build(job, status)
        z = np.zeros(2, dtype=np.int32)
        return Trajectory(status=status, traces=[Trace(prompt_ids=z, response_ids=z, loss_mask=np.ones(2, np.uint8),
                                                       response_logprobs=np.full(2, -0.5, np.float32))])

    async def evaluate(self, job: SessionJob, trajectory: Trajectory) -> EvalResult | None:
        raise RuntimeError("grader gone")


def test_evaluation_that_raises_marks_every_trace_not_trainable() -> None:
    from polar_hpc.evaluate.base import EVALUATION_ERROR

    h = Harness(CrashingEvaluationExecutor())

    async def main() -> None:
        h.submit(session(0))
        await h.pools.wait_idle()

    sim(main)
    (r,) = h.results
    assert r.trajectory.status is TraceStatus.ERROR and r.evaluation is None
    assert r.trajectory.error == "evaluation failed: RuntimeError('grader gone')"
    assert [(t.trainable, t.filter) for t in r.trajectory.traces] == [(False, [EVALUATION_ERROR])]


class BadTraceExecutor(SimulatedExecutor):
    """Builds a trace with a planted fidelity violation: a trainable token without a finite logprob."""

    async def build(self, job: SessionJob, status: TraceStatus) -> Trajectory:
        import numpy as np

        from polar_hpc.wire.traces import Trace

        ids = np.arange(3, dtype=np.int32)
        good = Trace(prompt_ids=ids, response_ids=ids, loss_mask=np.ones(3, dtype=np.uint8),
                     response_logprobs=np.full(3, -0.1, dtype=np.float32))
        bad = Trace(prompt_ids=ids, response_ids=ids, loss_mask=np.ones(3, dtype=np.uint8),
                    response_logprobs=np.array([-0.1, np.nan, -0.2], dtype=np.float32))
        return Trajectory(status=status, traces=[good, bad])


def test_fidelity_violation_is_reported_as_error_without_its_traces() -> None:
    h = Harness(BadTraceExecutor())

    async def main() -> None:
        h.submit(session(0))
        await h.pools.wait_idle()

    sim(main)
    (r,) = h.results
    assert r.trajectory.status is TraceStatus.ERROR and r.trajectory.traces == []
    assert "trace 1: loss_mask 1 without a finite logprob at token 1" in (r.trajectory.error or "")
    assert r.notes.traces_dropped == 2
