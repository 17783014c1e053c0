"""A finished session as a gateway rank commits it: its traces, outcome and stage timings."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from polar_hpc.wire.ids import GroupTag, SessionId
from polar_hpc.wire.traces import EvalResult, TraceStatus, Trajectory
from polar_hpc.wire.versions import INITIAL, PolicyVersion


class AgentOutcome(msgspec.Struct, kw_only=True, omit_defaults=True):
    """How the harness run ended. ``timeout`` still yields a partial trajectory."""

    status: Literal["completed", "failed", "timeout", "error"]
    returncode: int | None = None
    detail: str = ""

    @property
    def trace_status(self) -> TraceStatus:
        if self.status == "completed":
            return TraceStatus.COMPLETED
        if self.status == "timeout":
            return TraceStatus.TIMEOUT
        return TraceStatus.ERROR


class Released(msgspec.Struct, kw_only=True):
    """Why a session attempt was cut by the system (it runs again): set on the partial result kept aside."""

    reason: str
    rank: int
    draining: bool = False
    host: str = ""
    at: float = 0.0
    polar_hpc: str = ""
    """The version that set it aside."""


class SessionNotes(msgspec.Struct, kw_only=True, omit_defaults=True):
    """What the system noted about a session (None: nothing)."""

    harness_log_tail: str | None = None
    """The end of the harness's log (the gateway, at teardown)."""
    fidelity_violation: str | None = None
    """Why the session's traces broke token fidelity (they were dropped, ``postrun.session.fidelity_checked``)."""
    traces_dropped: int | None = None
    session_id: str | None = None
    """The id the records were written under (``polar-hpc build``: a rebuilt session)."""
    rebuilt_with: str | None = None
    """The builder that rebuilt the session from its records (``polar-hpc build``)."""


TIMING_ORDER = ("queue", "start", "prepare", "init", "ready_wait", "run", "prewarm", "postrun_wait", "build",
                "prewarm_wait", "evaluate", "teardown", "total")
"""Keys of ``SessionResult.timings`` in pipeline order (``init`` = start + prepare; ``total`` = submit to result)."""


class SessionResult(msgspec.Struct, kw_only=True):
    """Everything about one finished session: what goes into a shard and to subscribed trainers."""

    task_id: str
    sample_index: int
    attempt: int = 0
    trajectory: Trajectory
    evaluation: EvalResult | None = None
    timings: dict[str, float] = msgspec.field(default_factory=dict)
    """Stage durations in seconds (init, ready_wait, run, build, evaluate, write...)."""
    harness: str = ""
    model: str = ""
    policy_version: PolicyVersion = INITIAL
    gateway_rank: int = -1
    group: GroupTag | None = None
    """``Task.group`` of the session's task."""
    agent: AgentOutcome | None = None
    """How the harness run ended (None: it did not run)."""
    released: Released | None = None
    """Set on a released attempt's partial result (kept aside, never in a shard)."""
    notes: SessionNotes = msgspec.field(default_factory=SessionNotes)
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    """The task's own fields (``Task.metadata``)."""

    @property
    def id(self) -> SessionId:
        return SessionId(task_id=self.task_id, sample=self.sample_index, attempt=self.attempt)

    @property
    def key(self) -> str:
        return self.id.key

    @property
    def duration_s(self) -> float:
        """Wall time of the session: its ``total`` timing (older results without one: the stages summed)."""
        return self.timings["total"] if "total" in self.timings else sum(self.timings.values())

    @property
    def reward(self) -> float:
        return self.evaluation.outcome_reward if self.evaluation is not None else 0.0
