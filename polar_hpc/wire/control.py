"""Control-plane messages: the coordinator ROUTER, gateway and client DEALERs.

One frame per message: a msgpack-encoded tagged-union Struct (``type`` field = class name), token arrays as
raw buffers (``polar_hpc.wire.codec``). Schema evolution: new fields get defaults; a peer whose ``Hello.protocol``
differs from ``PROTOCOL_VERSION`` is refused with a ``Refused`` naming both versions.
"""

from __future__ import annotations

import enum
from typing import Any, Literal

import msgspec

from polar_hpc.wire.codec import msgpack_decoder, msgpack_encoder
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.session import Session, Task

PROTOCOL_VERSION = 3
"""3: ``Task.group``, ``SessionResult.group`` / ``.agent`` / ``.released`` / ``.notes``, ``Trace.meta`` typed (were
metadata keys)."""

ReleaseCause = Literal["cancelled", "drained", "interrupted", "failed"]
"""Why a rank released a session without a kept result (:class:`Released`)."""


class Msg(msgspec.Struct, tag_field="type", tag=True, kw_only=True, omit_defaults=True):
    """Base of every control message."""


# ---- peer handshake -------------------------------------------------------------------------------------

class SessionRef(msgspec.Struct, array_like=True, gc=False):
    key: str
    attempt: int


class ShardRef(msgspec.Struct, array_like=True, gc=False):
    path: str
    keys: list[str]


class Hello(Msg):
    """First message of every peer. Gateways fill rank/capacity; ``active``/``uncommitted`` let a restarted
    coordinator adopt sessions a live rank still holds instead of dispatching them again."""

    protocol: int
    role: Literal["gateway", "client"]
    rank: int = -1
    host: str = ""
    pid: int = 0
    proxy_endpoint: str = ""
    capacity: int = 0
    """Sessions the rank holds at once (all stages)."""
    stage_capacity: dict[str, int] = msgspec.field(default_factory=dict)
    active: list[SessionRef] = msgspec.field(default_factory=list)
    uncommitted: list[SessionRef] = msgspec.field(default_factory=list)
    committed: list[ShardRef] = msgspec.field(default_factory=list)
    """Shards this rank published whose ``Committed`` the coordinator has not acknowledged (``CommitAck``) yet;
    it may have been lost with the old connection. The coordinator takes their keys as committed and acks."""
    draining: bool = False


class Welcome(Msg):
    protocol: int
    run_name: str
    heartbeat_interval_s: float
    shards_dir: str


class Refused(Msg):
    reason: str
    rehello: bool = False
    """True when the peer only needs to send ``Hello`` again (e.g. the coordinator restarted)."""


# ---- gateway -> coordinator -----------------------------------------------------------------------------

class Heartbeat(Msg):
    rank: int
    occupancy: dict[str, int] = msgspec.field(default_factory=dict)
    """Sessions per stage (init, ready, run, postrun)."""
    queued: int = 0
    free: int = 0
    shard_in_progress: str | None = None
    uncommitted: int = 0
    draining: bool = False
    """The rank takes no new sessions (SIGTERM, drain; or paused while its engine is gone)."""


class SessionStatus(Msg):
    key: str
    attempt: int
    stage: str
    detail: str = ""


class SessionSummary(msgspec.Struct, kw_only=True, omit_defaults=True):
    status: int = 0
    """``TraceStatus`` value."""
    reward: float = 0.0
    accepted: bool = False
    num_traces: int = 0
    tokens: int = 0
    duration_s: float = 0.0
    error: str | None = None


class SessionDone(Msg):
    key: str
    attempt: int
    summary: SessionSummary
    result: SessionResult | None = None


class Rejected(Msg):
    """The rank could not take a dispatched session (draining, full); the coordinator queues it again."""

    key: str
    attempt: int
    reason: str


class Released(Msg):
    """A session the rank held ended without a (kept) result: ``cancelled`` (the coordinator asked),
    ``drained`` (cut by a drain before it could finish; queued again, no failure counted), ``interrupted`` (cut by
    the system while the rank is not draining: its engine went away; queued again, no failure counted) or
    ``failed`` (the rank lost it, e.g. the shard write failed after ``SessionDone``; queued again as a failed
    attempt)."""

    key: str
    attempt: int
    cause: ReleaseCause
    reason: str = ""


class Committed(Msg):
    rank: int
    path: str
    keys: list[str]


# ---- coordinator -> gateway -----------------------------------------------------------------------------

class Dispatch(Msg):
    sessions: list[Session]


class CancelSessions(Msg):
    keys: list[str]


class CommitAck(Msg):
    """The coordinator recorded the ``Committed`` of shard ``path``; the rank may forget its keys."""

    path: str


class CommitNow(Msg):
    """Publish the buffered shard now (the queue ran dry; nothing else will fill it soon)."""


class Drain(Msg):
    reason: str = ""


class Shutdown(Msg):
    reason: str = ""
    final: bool = True
    """False: the coordinator stopped without the run ending (its job stopped for a requeue, or killed): a client
    waits for the next coordinator and connects to it (``RunClient``)."""


class HeartbeatAck(Msg):
    pass


# ---- client <-> coordinator -----------------------------------------------------------------------------

class SubmitTasks(Msg):
    tasks: list[Task]
    req: int = 0


class SubmitReply(Msg):
    req: int
    accepted: list[str]
    rejected: dict[str, str] = msgspec.field(default_factory=dict)
    """task_id -> why."""


class GetTaskStatus(Msg):
    task_id: str
    req: int = 0
    with_results: bool = False


class SessionState(enum.IntEnum):
    PENDING = 0
    RUNNING = 1
    DONE = 2
    """Reported done, not yet in a committed shard."""
    COMMITTED = 3
    ERROR = 4
    CANCELLED = 5


TERMINAL = frozenset({SessionState.COMMITTED, SessionState.ERROR, SessionState.CANCELLED})


class SessionInfo(msgspec.Struct, array_like=True, gc=False):
    sample_index: int
    state: SessionState
    attempt: int
    rank: int
    reward: float
    stage: str


TaskState = Literal["pending", "running", "completed", "cancelled", "unknown"]


class TaskStatus(Msg):
    task_id: str
    req: int = 0
    found: bool = True
    state: TaskState = "unknown"
    num_samples: int = 0
    sessions: list[SessionInfo] = msgspec.field(default_factory=list)
    results: list[SessionResult] = msgspec.field(default_factory=list)
    """Results still held in the coordinator's buffer (the rest is in the shards)."""


class GetRunStatus(Msg):
    req: int = 0


class RankInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    rank: int
    host: str
    alive: bool
    capacity: int
    in_flight: int
    uncommitted: int
    occupancy: dict[str, int] = msgspec.field(default_factory=dict)
    last_seen_s: float = 0.0


class RunStatus(Msg):
    """Run progress; also written to ``run_dir/status.json``."""

    req: int = 0
    run_name: str = ""
    updated: float = 0.0
    """Wall clock (``time.time()``) when this status was made."""
    started: float = 0.0
    """Wall clock when the coordinator started (a requeued one: when the new one started)."""
    tasks: int = 0
    tasks_completed: int = 0
    sessions: dict[str, int] = msgspec.field(default_factory=dict)
    """Sessions per state name."""
    accepted: int = 0
    """Committed sessions accepted (``records.is_accepted``), resumed ones included; so are ``failed`` and the
    rewards."""
    failed: int = 0
    """Committed sessions whose outcome is an ERROR, and sessions given up."""
    reward_sum: float = 0.0
    reward_mean: float = 0.0
    duplicates: int = 0
    ranks_alive: int = 0
    ranks: list[RankInfo] = msgspec.field(default_factory=list)
    throughput_per_min: float = 0.0
    """Sessions done (evaluated; committed or not) per minute, over the last minutes."""
    eta_s: float | None = None
    subscribers: int = 0
    finished: bool = False
    tokens: int = 0
    """Tokens of the sessions done so far (their traces' token counts); tokens/s is its rate."""


class CancelTask(Msg):
    task_id: str
    req: int = 0


class CancelReply(Msg):
    req: int
    task_id: str
    cancelled: int
    running: int


class Subscribe(Msg):
    credits: int


class Credit(Msg):
    credits: int


class Unsubscribe(Msg):
    pass


class ResultMsg(Msg):
    seq: int
    result: SessionResult


class Lagged(Msg):
    """The subscriber fell more than the buffer behind; results ``seq`` in [first, last] were dropped here and
    are read from the committed shards under ``shards_dir``."""

    first_seq: int
    last_seq: int
    dropped: int
    shards_dir: str


class ErrorReply(Msg):
    error: str
    req: int = 0


UNKNOWN_SUBSCRIBER = "unknown subscriber: not subscribed (expired after silence, or the coordinator restarted); " \
    "send Subscribe again"
"""``ErrorReply.error`` for a ``Credit`` from a peer that is not subscribed."""


ToCoordinator = (
    Hello | Heartbeat | SessionStatus | SessionDone | Committed | Rejected | Released
    | SubmitTasks | GetTaskStatus | GetRunStatus | CancelTask | Subscribe | Credit | Unsubscribe
)
ToGateway = (
    Welcome | Refused | Dispatch | CancelSessions | CommitAck | CommitNow | Drain | Shutdown | HeartbeatAck
)
ToClient = (
    Welcome | Refused | SubmitReply | TaskStatus | RunStatus | CancelReply | ResultMsg | Lagged | ErrorReply
    | Shutdown | HeartbeatAck
)

_ENC = msgpack_encoder()


def encode(msg: Msg) -> bytes:
    return _ENC.encode(msg)


def coordinator_decoder() -> msgspec.msgpack.Decoder[Any]:
    return msgpack_decoder(ToCoordinator)  # type: ignore[arg-type]  # a Union: a msgspec type, not a type[T]


def gateway_decoder() -> msgspec.msgpack.Decoder[Any]:
    return msgpack_decoder(ToGateway)  # type: ignore[arg-type]  # a Union: a msgspec type, not a type[T]


def client_decoder() -> msgspec.msgpack.Decoder[Any]:
    return msgpack_decoder(ToClient)  # type: ignore[arg-type]  # a Union: a msgspec type, not a type[T]


def check_protocol(hello: Hello) -> str | None:
    """The refusal reason for an incompatible peer, or ``None``."""
    if hello.protocol != PROTOCOL_VERSION:
        return (
            f"incompatible control protocol: peer speaks version {hello.protocol}, coordinator speaks "
            f"{PROTOCOL_VERSION}; run the same polar-hpc version on every component"
        )
    return None
