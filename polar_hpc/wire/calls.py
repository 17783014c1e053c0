"""One model call as the proxy sees it: the provider-neutral request, its messages and tools, the sampling applied, and
the CompletionRecord kept of it (token ids, logprobs, timings)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
import numpy as np

from polar_hpc.config.run import (
    RenderMode,
    TokenPolicy,
)

Provider = Literal["anthropic", "openai_chat", "openai_responses", "google"]


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
    trained: bool = True
    """False: the oracle's deliberate miss in a recovery demonstration (``solution_first_try``); a chain keeps its
    tokens as context with ``loss_mask`` 0."""
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
