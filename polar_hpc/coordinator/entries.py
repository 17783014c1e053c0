"""The dispatch state's records: a task, a session and a gateway rank as the coordinator tracks them."""

from __future__ import annotations

from dataclasses import dataclass, field

from polar_hpc.wire.control import SessionState
from polar_hpc.wire.session import Task
from polar_hpc.wire.traces import TraceStatus, is_accepted

FIRST_TERMINAL = SessionState.COMMITTED
"""COMMITTED, ERROR and CANCELLED are the terminal states (compared as ints: no enum hashing)."""


@dataclass(slots=True)
class SessionEntry:
    task_id: str
    sample_index: int
    state: SessionState = SessionState.PENDING
    attempt: int = 0
    failures: int = 0
    rank: int = -1
    stage: str = ""
    reward: float = 0.0
    accepted: bool = False
    failed: bool = False
    """Its outcome is an ERROR (the harness, the sandbox or the evaluation failed)."""
    error: str | None = None

    def restore_outcome(self, outcome: tuple[int, float]) -> None:
        """Its (``TraceStatus`` value, reward) as read from the shards."""
        status, reward = outcome
        self.reward, self.accepted, self.failed = reward, is_accepted(status, reward), status == TraceStatus.ERROR


@dataclass(slots=True)
class TaskEntry:
    task: Task
    keys: list[str]
    open: int
    """Sessions not yet terminal."""
    cancelled: bool = False
    restored_complete: bool = False
    """Complete already when the coordinator (re)started (every session in the shards, or given up)."""


@dataclass(slots=True)
class RankEntry:
    rank: int
    peer: bytes
    capacity: int
    host: str = ""
    proxy_endpoint: str = ""
    last_seen: float = 0.0
    last_ack: float = float("-inf")
    alive: bool = True
    draining: bool = False
    in_flight: set[str] = field(default_factory=set)
    uncommitted: set[str] = field(default_factory=set)
    occupancy: dict[str, int] = field(default_factory=dict)
    version: int = 0

    @property
    def free(self) -> int:
        return self.capacity - len(self.in_flight)

    def load_key(self) -> tuple[float, int]:
        ready = self.occupancy.get("ready", 0)
        return (len(self.in_flight) / max(self.capacity, 1), ready)
