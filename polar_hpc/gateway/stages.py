"""What flows through the stage pools: stages, the per-session job, the agent outcome, the executor seam."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import math
from collections.abc import Iterator
from typing import Protocol

from polar_hpc.wire.resolved import ResolvedSession
from polar_hpc.wire.results import AgentOutcome, SessionNotes
from polar_hpc.wire.traces import EvalResult, TraceStatus, Trajectory


class Stage(enum.StrEnum):
    QUEUED = "queued"
    INIT = "init"
    READY = "ready"
    RUN = "run"
    POSTRUN = "postrun"
    DONE = "done"
    CANCELLED = "cancelled"
    RELEASED = "released"
    """Cut by the system (a drain, its engine gone) before it could finish: no outcome, it runs again."""


FINAL_STAGES = frozenset({Stage.DONE, Stage.CANCELLED, Stage.RELEASED})


class SessionJob:
    """One session's life inside a rank (in-process only; never crosses a process boundary)."""

    def __init__(self, session: ResolvedSession, submitted_at: float) -> None:
        self.session = session
        self.stage = Stage.QUEUED
        self.submitted_at = submitted_at
        self.deadline = math.inf
        """Session deadline (loop time), set when INIT starts."""
        self.timings: dict[str, float] = {}
        self.failure: tuple[TraceStatus, str] | None = None
        """INIT/READY failure: no harness ran, POSTRUN reports it without building."""
        self.agent: AgentOutcome | None = None
        self.own_deadline = math.inf
        """When the session's own budget (agent or session) ends its RUN (loop time); a cut before it is the
        system's."""
        self.released: str | None = None
        """Why the system cut the session (it is released, not reported); None: it ran to its own outcome."""
        self.state: object | None = None
        """The executor's per-session state (runtime, proxy key, ...): its own type, which the pools never read."""
        self.prewarm: asyncio.Task[None] | None = None
        self.run_timeout: asyncio.Timeout | None = None
        self.task: asyncio.Task[None] | None = None
        self.teardown_task: asyncio.Task[None] | None = None
        self.aside_task: asyncio.Task[None] | None = None
        """Setting a released attempt aside; the teardown waits for it."""
        self.torn_down = False
        self.notes = SessionNotes()
        """The result's notes (the tail of the harness log)."""

    @property
    def session_id(self) -> str:
        return self.session.session_id


@contextlib.contextmanager
def timed(job: SessionJob, name: str) -> Iterator[None]:
    """Adds the loop time spent in the block to ``job.timings[name]``."""
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    try:
        yield
    finally:
        job.timings[name] = job.timings.get(name, 0.0) + (loop.time() - t0)


class SessionExecutor(Protocol):
    """The work of each stage; the pools own ordering, budgets, statuses, timings and teardown.

    Every method may raise; the pools turn exceptions into ERROR results and still call ``teardown``.
    Methods are cancelled when the session is cancelled or its budget runs out.
    """

    async def start(self, job: SessionJob) -> None:
        """Start the sandbox (runs under the start gate)."""

    async def prepare(self, job: SessionJob) -> None:
        """Run the runtime's prepare actions (retries are the executor's)."""

    def wants_prewarm(self, job: SessionJob) -> bool:
        """Whether the evaluator wants a fresh runtime, started while the harness runs."""

    async def prewarm(self, job: SessionJob) -> None: ...

    async def run(self, job: SessionJob, budget_s: float) -> AgentOutcome:
        """Run the harness; the pools cancel it when ``budget_s`` is spent (outcome ``timeout``)."""

    async def build(self, job: SessionJob, status: TraceStatus) -> Trajectory: ...

    async def evaluate(self, job: SessionJob, trajectory: Trajectory) -> EvalResult | None: ...

    async def teardown(self, job: SessionJob) -> None:
        """Stop every runtime of the session and close its proxy session; idempotent."""
