"""One completion: prompt ids → engine → parsed reply → CompletionRecord. No HTTP here."""

from __future__ import annotations

import os
import time
from typing import Protocol

import msgspec
import numpy as np

from polar_hpc.chat.parse import ParsedReply, parse_reply
from polar_hpc.chat.template import ChatTemplate
from polar_hpc.config.run import ToolParser
from polar_hpc.engine.errors import ContextOverflow, EngineError, EngineTimeout, EngineUnavailable
from polar_hpc.engine.limits import new_token_limit
from polar_hpc.engine.protocol import DEFAULT_TEMPERATURE, DEFAULT_TOP_K, DEFAULT_TOP_P
from polar_hpc.engine.result import GenerateResult
from polar_hpc.policy.oracle import OraclePolicy
from polar_hpc.policy.script import OracleError
from polar_hpc.providers import provider_api
from polar_hpc.providers.errors import Failed, ProxyError, bad_request, context_overflow
from polar_hpc.providers.reply import Reply
from polar_hpc.providers.request import Normalized
from polar_hpc.providers.side import is_side_request
from polar_hpc.proxy.live import LiveSink
from polar_hpc.proxy.prompt import PromptBuild, PromptBuilder
from polar_hpc.proxy.settings import ProxySettings
from polar_hpc.wire.calls import (
    AppliedSampling,
    CanonicalRequest,
    ChatMessage,
    CompletionRecord,
    Provider,
    SamplingParams,
    Timings,
)
from polar_hpc.wire.session import call_seed

_EMPTY_I = np.zeros(0, dtype=np.int32)
_EMPTY_F = np.zeros(0, dtype=np.float32)


def _uuid4_hex() -> str:
    """``uuid.uuid4().hex`` (16 random bytes, version 4, RFC 4122 variant) without building a ``UUID``."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    return b.hex()


def _fill_prompt(record: CompletionRecord, ids: list[int], req: CanonicalRequest) -> None:
    """The record's fields of the prompt that nothing reads before the call ends: set after the engine call
    (or its failure), so that the engine request, and with it the first byte of a stream, waits for none of them."""
    record.prompt_ids = np.asarray(ids, dtype=np.int32)
    record.side_request = is_side_request(req)


def _build_prompt(builder: PromptBuilder, req: CanonicalRequest) -> PromptBuild:
    try:
        return builder.build(req)
    except (ValueError, TypeError) as err:  # TemplateError is a ValueError
        raise bad_request(f"the model's chat template cannot render this conversation: {err}") from None


def _new_record(prompt: PromptBuild, req: CanonicalRequest, *, provider: Provider, session_id: str, index: int,
                raw_request: bytes, received: float) -> CompletionRecord:
    """The call's record before the engine answers (an error from here on is kept with it)."""
    return CompletionRecord(
        completion_id=_uuid4_hex(),
        session_id=session_id,
        index=index,
        provider=provider,
        request=msgspec.Raw(raw_request),
        canonical=req,
        prompt_ids=_EMPTY_I,  # with side_request: _fill_prompt
        output_ids=_EMPTY_I,
        output_logprobs=_EMPTY_F,
        finish_reason="error",
        response=ChatMessage(role="assistant"),
        render_mode=prompt.mode,
        divergence_tokens=prompt.divergence_tokens,
        held_tokens=prompt.held_tokens,
        rendered_tokens=prompt.rendered_tokens,
        timings=Timings(received=received),
    )


def applied_sampling(s: SamplingParams) -> AppliedSampling:
    """What the engine applies for ``s``: its values, ``/generate``'s defaults for those it leaves out."""
    return AppliedSampling(temperature=DEFAULT_TEMPERATURE if s.temperature is None else s.temperature,
                           top_p=DEFAULT_TOP_P if s.top_p is None else s.top_p,
                           top_k=DEFAULT_TOP_K if s.top_k is None else s.top_k, seed=s.seed)


def _fill_reply(record: CompletionRecord, result: GenerateResult, out: np.ndarray, parsed: ParsedReply) -> None:
    """The record's fields of the engine's answer."""
    record.output_ids = out
    record.output_logprobs = np.asarray(result.output_logprobs, dtype=np.float32)
    if result.output_top_ids.size:
        record.output_top_ids = result.output_top_ids.astype(np.int32, copy=False).reshape(-1)
        record.output_top_logprobs = result.output_top_logprobs.astype(np.float32, copy=False).reshape(-1)
    record.finish_reason = result.finish_reason
    record.response = ChatMessage(role="assistant", content=parsed.content, reasoning_content=parsed.reasoning,
                                  tool_calls=parsed.tool_calls)
    record.parse_error = parsed.parse_error
    record.weight_version = result.weight_version
    record.server = result.server or None


class Engine(Protocol):
    """What the proxy needs of its engine client: :class:`~polar_hpc.engine.engine.SGLangEngine` (tests give
    a scripted one). Streaming (``proxy.live.StreamingEngine``) and teacher forcing
    (``policy.oracle.ForcingEngine``) are capabilities on top, checked where they are used."""

    async def generate(
        self,
        input_ids: list[int],
        sampling: SamplingParams,
        *,
        session_id: str | None = None,
        stop_token_ids: list[int] | None = None,
        deadline: float | None = None,
    ) -> GenerateResult: ...

    def forget_session(self, session_id: str) -> None:
        """The session ended: drop what the engine keeps for it (its sticky server)."""


class Generator:
    """What every call of every session shares: template, engine, limits, parser."""

    def __init__(self, template: ChatTemplate, engine: Engine, settings: ProxySettings) -> None:
        self.template = template
        self.run_seed = settings.run_seed
        """Seeds every sampled call whose request carries no seed (``wire.session.call_seed``); None: unseeded."""
        self.engine = engine
        self.tool_parser: ToolParser = settings.tool_parser
        self.context_length = settings.context_length
        self.max_new_tokens = settings.max_new_tokens
        self.enable_thinking = settings.enable_thinking
        self.request_timeout_s = settings.request_timeout_s
        self.stop_ids = frozenset(template.stop_token_ids)
        self._think_open = self._single_id("<think>")
        self._think_close = self._single_id("</think>")

    def _single_id(self, text: str) -> int | None:
        ids = self.template.encode(text)
        return ids[0] if len(ids) == 1 else None

    def prepare(self, norm: Normalized) -> None:
        if self.enable_thinking is not None:
            norm.canonical.template_kwargs["enable_thinking"] = self.enable_thinking

    def _in_think(self, prompt: list[int]) -> bool:
        """The prompt ends inside an opened ``<think>`` (templates that start the reasoning for the model)."""
        if self._think_open is None:
            return False
        tail = prompt[-4:]
        if self._think_open not in tail:
            return False
        last_open = len(tail) - 1 - tail[::-1].index(self._think_open)
        return self._think_close not in tail[last_open:]

    async def complete(
        self,
        norm: Normalized,
        builder: PromptBuilder,
        *,
        provider: Provider,
        session_id: str,
        index: int,
        raw_request: bytes,
        received: float,
        oracle: OraclePolicy | None = None,
        sink: LiveSink | None = None,
    ) -> tuple[Reply, CompletionRecord]:
        """Prompt → record → (oracle) → limits → engine → parse → reply. ``sink``: a streaming client's, which
        samples through a streamed engine call (same result)."""
        req = norm.canonical
        prompt = _build_prompt(builder, req)
        ids = prompt.ids
        record = _new_record(prompt, req, provider=provider, session_id=session_id, index=index,
                             raw_request=raw_request, received=received)
        forced = self._oracle_ids(oracle, req, raw_request, provider, ids) if oracle is not None else None
        if forced is not None and oracle is not None:
            record.policy = "oracle"
            record.trained = oracle.last_trained
            record.action_format = oracle.script.actions.name
        sampling = self._limited(req, record, ids, forced)
        if forced is None:
            if sampling.seed is None and self.run_seed is not None:
                sampling = msgspec.structs.replace(sampling, seed=call_seed(self.run_seed, session_id, index))
            record.sampling = applied_sampling(sampling)
        record.timings.engine_start = time.time()
        try:
            result = await self._sample(ids, sampling, session_id, oracle, forced, record, sink)
        except EngineError as e:
            record.parse_error = str(e)
            raise Failed(self._engine_failure(e, len(ids)), record) from None
        finally:
            _fill_prompt(record, ids, req)
        record.timings.engine_end = time.time()
        out = np.asarray(result.output_ids, dtype=np.int32)
        parsed, stop_seq = self._parse(result, out, ids, req, provider, sink)
        _fill_reply(record, result, out, parsed)
        builder.observe(req, ids, out.tolist(), result.finish_reason, record.response)
        reply = Reply(
            id=record.completion_id,
            model=norm.options.model or req.model,
            created=int(record.timings.received),
            parsed=parsed,
            finish=result.finish_reason,
            stop_sequence=stop_seq,
            prompt_tokens=len(ids),
            output_tokens=len(out),
            options=norm.options,
        )
        return reply, record

    def _limited(self, req: CanonicalRequest, record: CompletionRecord, ids: list[int],
                 forced: list[int] | None) -> SamplingParams:
        """The request's sampling with its new-token limit (a prompt over the context: ``Failed``)."""
        n = len(ids)
        asked = req.sampling.max_new_tokens
        try:  # a forced reply's tokens but its last are prompt tokens of the scoring call
            limit = new_token_limit(n + len(forced or (0,)) - 1, self.context_length,
                                    None if asked is None else max(1, asked), self.max_new_tokens)
        except ContextOverflow:
            overflow = context_overflow(n + len(forced or ()), self.context_length)
            record.parse_error = overflow.message
            _fill_prompt(record, ids, req)
            raise Failed(overflow, record) from None
        return msgspec.structs.replace(req.sampling, max_new_tokens=limit)

    async def _sample(self, ids: list[int], sampling: SamplingParams, session_id: str, oracle: OraclePolicy | None,
                      forced: list[int] | None, record: CompletionRecord, sink: LiveSink | None) -> GenerateResult:
        """The engine call: the oracle's forced reply scored, or sampled (streamed through ``sink`` when given)."""
        deadline = time.monotonic() + self.request_timeout_s if self.request_timeout_s else None
        if oracle is not None and forced is not None:
            return await oracle.score(self.engine, ids, forced, session_id=session_id, deadline=deadline)
        if sink is None:
            return await self.engine.generate(
                ids, sampling, session_id=session_id, stop_token_ids=list(self.stop_ids), deadline=deadline
            )
        return await sink.generate(ids, sampling, record, session_id=session_id, stop_token_ids=list(self.stop_ids),
                                   deadline=deadline, in_think=self._in_think(ids))

    def _engine_failure(self, e: EngineError, prompt_tokens: int) -> ProxyError:
        """The error the client gets for an engine call that failed."""
        if isinstance(e, ContextOverflow):
            return context_overflow(e.prompt_tokens or prompt_tokens, e.context_length or self.context_length)
        if isinstance(e, EngineTimeout):
            return ProxyError("engine_timeout", f"the model server did not answer in time: {e}")
        if isinstance(e, EngineUnavailable):
            return ProxyError("engine_down", f"no model server is available: {e}")
        return ProxyError("engine_error", f"the model server failed: {e}")

    def _parse(self, result: GenerateResult, out: np.ndarray, ids: list[int], req: CanonicalRequest,
               provider: Provider, sink: LiveSink | None) -> tuple[ParsedReply, str | None]:
        """The sampled text (without its stop token and matched stop string) parsed; the stop string."""
        text_ids = out[:-1] if len(out) and int(out[-1]) in self.stop_ids else out
        text = sink.reply_text(len(text_ids)) if sink is not None else None
        if text is None:
            text = self.template.decode(text_ids.tolist())
        stop_seq = result.matched_stop if isinstance(result.matched_stop, str) else None
        if stop_seq and text.endswith(stop_seq):
            text = text[: -len(stop_seq)]
        prefix = provider_api(provider).tool_call_prefix
        parsed = parse_reply(text, self.tool_parser, req.tools, in_think=self._in_think(ids), id_prefix=prefix)
        return parsed, stop_seq

    def _oracle_ids(self, oracle: OraclePolicy, req: CanonicalRequest, raw_request: bytes, provider: Provider,
                    ids: list[int]) -> list[int] | None:
        """The oracle's forced reply ids for this request (None: not an agent call, the engine samples)."""
        try:
            return oracle.reply_ids(req, raw_request, provider, in_think=self._in_think(ids))
        except OracleError as err:
            raise bad_request(f"oracle policy: {err}") from None
