"""The data model that flows from the proxy to the trainer.

Token arrays are numpy arrays (int32 ids, uint8 masks, float32 logprobs); ``polar_hpc.wire.codec``
carries them as raw buffers in msgpack and as typed objects in JSON.
"""

from __future__ import annotations

import enum
import hashlib
from typing import Any, Literal

import msgspec
import numpy as np

from polar_hpc.config.run import (
    ACCEPT_REWARD,
    AgentSpec,
    BuilderSpec,
    EvaluatorSpec,
    RenderMode,
    RuntimeSpec,
    TokenPolicy,
)
from polar_hpc.wire.ids import GroupTag, SessionId
from polar_hpc.wire.versions import INITIAL, PolicyVersion

Provider = Literal["anthropic", "openai_chat", "openai_responses", "google"]

SOLUTION_PATCH = "solution_patch"
"""Task metadata key: the reference solution as a unified diff (SWE-bench's ``patch``), for the oracle policy."""
SOLUTION_COMMANDS = "solution_commands"
"""Task metadata key: the reference solution as a list of shell commands (run in the workdir, in order)."""
SOLUTION_FILES = "solution_files"
"""Task metadata key: the files the solution commands edit (what the oracle reads before it runs them; a patch
names its own)."""
SOLUTION_DIR = "solution_dir"
"""Task metadata key: a host folder the solution commands need (a Harbor task's ``solution/``), copied to
:data:`SANDBOX_SOLUTION_DIR` in the session's sandbox before the harness starts, under the ``oracle`` policy only."""
SANDBOX_SOLUTION_DIR = "/solution"


class Task(msgspec.Struct, kw_only=True):
    task_id: str
    instruction: str
    num_samples: int = 1
    runtime: RuntimeSpec | None = None
    agent: AgentSpec | None = None
    builder: BuilderSpec | None = None
    evaluator: EvaluatorSpec | None = None
    timeout_s: float | None = None
    agent_timeout_s: float | None = None
    """The agent's budget in this task's sessions (a Harbor task's ``[agent] timeout_sec``); None:
    ``gateway.agent_timeout_s``."""
    workspace: str | None = None
    """Host folder copied into the sandbox's workdir before the prepare actions run."""
    group: GroupTag | None = None
    """A trainer's GRPO group (its id is ``task_id``); None: a task of its own."""
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    """The user's own task fields (and the solution keys above), copied into every ``SessionResult``."""


class Session(msgspec.Struct, kw_only=True):
    """One attempt at one sample of one task. ``key`` identifies the sample across attempts."""

    task: Task
    sample_index: int
    attempt: int = 0
    policy_version: PolicyVersion = INITIAL

    @property
    def id(self) -> SessionId:
        return SessionId(task_id=self.task.task_id, sample=self.sample_index, attempt=self.attempt)

    @property
    def key(self) -> str:
        return self.id.key

    @property
    def session_id(self) -> str:
        return str(self.id)


SEED_BITS = 63
"""Sampling seeds are non-negative int64 (SGLang's ``sampling_seed`` tensor; ``torch.Generator.manual_seed``)."""


def call_seed(run_seed: int, session_id: str, index: int) -> int:
    """The sampling seed of model call ``index`` (its arrival order in the session) of ``session_id`` in a run
    seeded ``run_seed`` (``inference.random_seed``): the one derivation, applied by the proxy to a call whose
    request carries no seed of its own.

    The call's identity is the task id (a GRPO group's id carries its rollout step, ``task@stepN``), the sample
    index and the call index; the attempt is left out, so a session run again after a lost rank samples the same
    tokens. 63 bits of BLAKE2b over the four values: independent of the order calls reach the engine, of the
    batch they share and of the process that asks."""
    sid = SessionId.parse_foreign(session_id)
    digest = hashlib.blake2b(f"{run_seed}\0{sid.task_id}\0{sid.sample}\0{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & ((1 << SEED_BITS) - 1)


class ToolCall(msgspec.Struct, kw_only=True, omit_defaults=True):
    id: str
    name: str
    arguments: str
    """JSON text of the arguments, as the model wrote them."""


Role = Literal["system", "user", "assistant", "tool"]


class ChatMessage(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Canonical chat message (OpenAI-chat-like), what every provider request normalizes to."""

    role: Role
    content: str = ""
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None


class ToolSpec(msgspec.Struct, kw_only=True, omit_defaults=True):
    name: str
    description: str = ""
    parameters: dict[str, Any] = msgspec.field(default_factory=dict)


class SamplingParams(msgspec.Struct, kw_only=True, omit_defaults=True):
    max_new_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop: list[str] = msgspec.field(default_factory=list)
    seed: int | None = None


class AppliedSampling(msgspec.Struct, kw_only=True, frozen=True):
    """What the engine applied to a sampled call: the request's values, or ``/generate``'s defaults for those it
    left out (``engine.protocol``); the recorded logprobs are under ``softmax(logits / temperature)``."""

    temperature: float
    top_p: float
    top_k: int
    """-1: off."""
    seed: int | None = None
    """The call's ``sampling_seed`` (the harness's ``seed``, or :func:`call_seed`); None: not seeded."""


class CanonicalRequest(msgspec.Struct, kw_only=True):
    messages: list[ChatMessage]
    tools: list[ToolSpec] = msgspec.field(default_factory=list)
    tool_choice: str | None = None
    sampling: SamplingParams = msgspec.field(default_factory=SamplingParams)
    template_kwargs: dict[str, Any] = msgspec.field(default_factory=dict)
    stream: bool = False
    model: str = ""
    notes: list[str] = msgspec.field(default_factory=list)
    """What normalization dropped or changed (e.g. a hosted tool removed)."""


class Timings(msgspec.Struct, kw_only=True, omit_defaults=True):
    received: float = 0.0
    engine_start: float = 0.0
    engine_end: float = 0.0
    responded: float = 0.0


class CompletionRecord(msgspec.Struct, kw_only=True):
    """One model call as the proxy saw it, at token level."""

    completion_id: str
    session_id: str
    index: int
    """Arrival order within the session."""
    provider: Provider
    request: msgspec.Raw = msgspec.Raw(b"null")
    """The original request body, kept as raw JSON: records are stored and sent as JSON (JSONL files, spill),
    never as msgpack, which would embed these bytes verbatim."""
    canonical: CanonicalRequest
    prompt_ids: np.ndarray
    output_ids: np.ndarray
    output_logprobs: np.ndarray
    finish_reason: str
    """``stop`` | ``length`` | ``abort`` | ``error``."""
    response: ChatMessage
    """The parsed reply: content, reasoning, tool calls."""
    parse_error: str | None = None
    render_mode: RenderMode = "canonical"
    divergence_tokens: int = 0
    """Continuation mode: tokens where the prompt differs from a canonical render (0 = identical, -1 = not
    measured: measuring re-renders the whole history, the cost continuation mode avoids)."""
    side_request: bool = False
    held_tokens: int = 0
    """Continuation mode: prompt tokens reused verbatim from an earlier call (held ids ‖ its reply)."""
    rendered_tokens: int = 0
    """Prompt tokens this call rendered and encoded (the whole prompt in canonical mode)."""
    timings: Timings = msgspec.field(default_factory=Timings)
    weight_version: str | None = None
    server: str | None = None
    policy: TokenPolicy = "sample"
    """``oracle``: the output ids were forced (the task's reference solution) and scored by the engine."""
    action_format: str | None = None
    """How the oracle wrote this reply's actions (``ActionFormat.name``: ``tool_calls`` or ``text:<fence>``);
    None for a sampled reply."""
    sampling: AppliedSampling | None = None
    """What the engine applied to sample this reply (None: an oracle (forced) reply, or a record from before it was
    kept)."""
    output_top_ids: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    """With ``inference.top_logprobs`` = k: the k most likely ids at each sampled position, row-major and flat
    (``len(output_ids) * k`` items; -1 where the engine sent none). Empty: not asked for."""
    output_top_logprobs: np.ndarray = msgspec.field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    """Their logprobs (float32, the same layout; NaN where none)."""


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
