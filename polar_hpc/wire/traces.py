"""What a session's calls become: traces (token ids, loss mask, logprobs, reward) and their status, the trajectory a
builder makes, the evaluation's result.

Token arrays are numpy arrays (int32 ids, uint8 masks, float32 logprobs); ``polar_hpc.wire.codec`` carries them as
raw buffers in msgpack and as typed objects in JSON."""

from __future__ import annotations

import enum
from typing import Any

import msgspec
import numpy as np

from polar_hpc.config.run import (
    ACCEPT_REWARD,
    TokenPolicy,
)
from polar_hpc.wire.calls import AppliedSampling, ChatMessage, ToolSpec


class TraceStatus(enum.IntEnum):
    COMPLETED = 0
    TIMEOUT = 1
    ERROR = 2


def is_accepted(status: int, reward: float, accept: float = ACCEPT_REWARD) -> bool:
    return status == TraceStatus.COMPLETED and reward >= accept


def trace_status(value: TraceStatus | int | str) -> TraceStatus:
    """A status from its enum, number, or name in any case (``"COMPLETED"``, ``"timeout"``)."""
    if isinstance(value, TraceStatus):
        return value
    if isinstance(value, str):
        try:
            return TraceStatus[value.strip().upper()]
        except KeyError:
            pass
    elif isinstance(value, int) and not isinstance(value, bool) and value in TraceStatus._value2member_map_:
        return TraceStatus(value)
    names = ", ".join(s.name for s in TraceStatus)
    raise ValueError(f"unknown trace status {value!r}; expected one of {names} (or {min(TraceStatus):d}.."
                     f"{max(TraceStatus):d})")


class RetriedAbort(msgspec.Struct, kw_only=True):
    """A call left out of the trajectory: aborted (its client went away) and sent again with the same prompt."""

    completion_id: str
    index: int
    sampled_tokens: int
    retried_by: str
    """The completion that took its place."""


class TraceMeta(msgspec.Struct, kw_only=True):
    """What the trajectory builders record about a trace's completions (``Trace.meta``).

    In the shards it is the trace's metadata JSON object (``wire.shardmeta``); keys a builder does not write read
    as the defaults (``per_request`` writes no chain fork fields)."""

    session_id: str = ""
    completion_ids: list[str] = msgspec.field(default_factory=list)
    completion_indices: list[int] = msgspec.field(default_factory=list)
    render_modes: list[str] = msgspec.field(default_factory=list)
    divergence_tokens: list[int] = msgspec.field(default_factory=list)
    weight_versions: list[str] = msgspec.field(default_factory=list)
    sampling: list[AppliedSampling | None] = msgspec.field(default_factory=list)
    """Per completion (aligned with ``completion_ids``): what the engine applied (None: forced by the oracle).
    Empty in traces recorded before it was kept."""
    unparsed_tool_calls: dict[str, str] = msgspec.field(default_factory=dict)
    """completion_id -> why its tool call did not parse."""
    engine_time_s: float = 0.0
    chain_index: int | None = None
    parent_chain: int | None = None
    fork_token: int | None = None
    fork_completion_id: str | None = None
    break_reason: str | None = None
    retokenized_tokens: int | None = None
    retried_aborts: list[RetriedAbort] = msgspec.field(default_factory=list)

    def temperatures(self) -> list[float]:
        """The distinct temperatures the engine sampled this trace's completions at (empty: none recorded)."""
        return sorted({s.temperature for s in self.sampling if s is not None})


def unfinished_filter(status: TraceStatus) -> str:
    """The ``Trace.filter`` reason of a trace whose session ended ``status`` (not COMPLETED): ``session_timeout``..."""
    return f"session_{status.name.lower()}"


class Trace(msgspec.Struct, kw_only=True):
    prompt_ids: np.ndarray
    response_ids: np.ndarray
    loss_mask: np.ndarray
    response_logprobs: np.ndarray
    prompt_messages: list[ChatMessage] = msgspec.field(default_factory=list)
    response_messages: list[ChatMessage] = msgspec.field(default_factory=list)
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    finish_reason: str = "stop"
    reward: float = 0.0
    meta: TraceMeta = msgspec.field(default_factory=TraceMeta)
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    """Keys of the trace's metadata that are not :class:`TraceMeta`'s (a caller's own)."""
    policy: TokenPolicy = "sample"
    """``oracle`` when any of its completions was forced: gold demonstrations, not behaviour-policy samples."""
    trainable: bool = True
    """False when a trainer should leave the trace out (kept, never dropped); ``filter`` says why."""
    filter: list[str] = msgspec.field(default_factory=list)
    """Why the trace is not trainable: ``session_<status>``, ``unparsed_tool_call``, ``evaluation_error``."""
    response_top_ids: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    """With ``inference.top_logprobs`` = k: per response token, the sampler's k most likely ids at that position,
    row-major and flat (``len(response_ids) * k`` items; -1 where no call sampled the token). Empty: not
    recorded. ``top_width`` gives k."""
    response_top_logprobs: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    """Their logprobs (float32, the same layout; NaN where none)."""
    response_versions: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    """int32, aligned with ``response_ids``: the weight version that sampled each token (``wire.versions``:
    ``default`` 0, ``"N"`` N; -1 where no call sampled it or the version is unknown). Empty: not recorded (traces
    built before it was kept; the shards then read -1 everywhere)."""

    @property
    def top_width(self) -> int:
        """k of ``response_top_ids`` (0: not recorded)."""
        n = int(self.response_ids.shape[0])
        return int(self.response_top_ids.shape[0]) // n if n else 0

    def mark_not_trainable(self, reason: str) -> None:
        """Add a training filter reason (once) and mark the trace not trainable."""
        if reason not in self.filter:
            self.filter = [*self.filter, reason]
        self.trainable = False


class ReconstructionStats(msgspec.Struct, kw_only=True):
    builder: str = ""
    completions: int = 0
    chains: int = 0
    completions_merged: int = 0
    side_requests_excluded: int = 0
    tokens_trainable: int = 0
    tokens_masked: int = 0
    breaks: dict[str, int] = msgspec.field(default_factory=dict)
    """Why chains broke: reason -> count."""


class Trajectory(msgspec.Struct, kw_only=True):
    status: TraceStatus
    traces: list[Trace] = msgspec.field(default_factory=list)
    stats: ReconstructionStats = msgspec.field(default_factory=ReconstructionStats)
    error: str | None = None


class EvalResult(msgspec.Struct, kw_only=True):
    outcome_reward: float
    trace_rewards: list[float] | None = None
    details: dict[str, Any] = msgspec.field(default_factory=dict)
