"""Async client of SGLang's native ``POST /generate``: token ids in, sampled ids and logprobs out.

One pooled aiohttp session (``trust_env=False``: cluster proxy variables must not reroute intra-cluster
traffic). Several servers are routed by :class:`~polar_hpc.engine.routing.ServerPool`. Each attempt uses a
fresh ``rid`` (SGLang refuses an rid already in flight), retries go to another server on connection errors
and 5xx with exponential backoff, and every call has a deadline. A cancelled or timed-out call aborts its
request on the server (``/abort_request``) so it does not hold a KV-cache slot.

Deadlines are absolute ``time.monotonic()`` values (the clock asyncio's loop uses on Linux).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import msgspec
import numpy as np

from polar_hpc.config.run import InferenceConfig, ProxyConfig
from polar_hpc.engine.admin import EngineAdmin
from polar_hpc.engine.attempts import Attempts
from polar_hpc.engine.errors import ContextOverflow, EngineError, EngineTimeout
from polar_hpc.engine.forcing import ForcedResult, forced_logprobs, forcing_request
from polar_hpc.engine.http1 import Http1Pool
from polar_hpc.engine.limits import new_token_limit
from polar_hpc.engine.protocol import (
    ErrorResponse,
    GenerateRequest,
    GenerateResponse,
    WireSampling,
    finish_fields,
    new_rid,
)
from polar_hpc.engine.result import GenerateResult, top_arrays
from polar_hpc.engine.routing import ServerPool, ServerState
from polar_hpc.engine.stream import EngineStream, open_stream
from polar_hpc.log import get_logger
from polar_hpc.wire.records import SamplingParams

log = get_logger("inference.engine")

_INF = InferenceConfig()
_PROXY = ProxyConfig()
"""The recipe's defaults, which the client's own defaults are."""


def _is_context_error(message: str) -> bool:
    m = message.lower()
    return "context length" in m or "maximum context" in m or "longer than the model" in m


class SGLangEngine(EngineAdmin):
    """Client of one or more SGLang (or reference) servers; see ``docs/interfaces.md``.

    ``context_length``: when known, ``max_new_tokens`` is clamped to the room left after the prompt and a
    prompt that leaves no room raises :class:`ContextOverflow` without a request. ``request_hook`` receives
    every ``/generate`` body before it is sent (contract tests validate them against SGLang's schema).
    ``api_key``: the servers' key (SGLang's ``--api-key``), sent as ``Authorization: Bearer`` on every call.
    ``max_connections``: most requests in flight to the servers at once (more wait their turn); 0 = no limit.
    ``stream_interval``, ``stream_max_delay_s``: the cadence of streamed calls (``proxy.*`` of a recipe).
    """

    @classmethod
    def from_config(cls, endpoints: list[str], inference: InferenceConfig, proxy: ProxyConfig, *,
                    api_key: str | None) -> SGLangEngine:
        """The engine client of a proxy (a gateway rank's, ``polar-hpc proxy``'s) as the recipe's sections say."""
        return cls(endpoints, request_timeout_s=inference.request_timeout_s, context_length=inference.context_length,
                   default_max_new_tokens=inference.max_new_tokens, api_key=api_key,
                   stream_interval=proxy.stream_interval, stream_max_delay_s=proxy.stream_max_delay_s,
                   top_logprobs=inference.top_logprobs)

    def __init__(
        self,
        endpoints: list[str],
        *,
        request_timeout_s: float = _INF.request_timeout_s,
        max_retries: int = 3,
        context_length: int | None = None,
        default_max_new_tokens: int = _INF.max_new_tokens,
        backoff_s: float = 0.2,
        max_backoff_s: float = 5.0,
        connect_timeout_s: float = 10.0,
        admin_timeout_s: float = 600.0,
        request_hook: Callable[[bytes], None] | None = None,
        api_key: str | None = None,
        max_connections: int = 0,
        stream_interval: int = _PROXY.stream_interval,
        stream_max_delay_s: float = _PROXY.stream_max_delay_s,
        top_logprobs: int = _INF.top_logprobs,
    ) -> None:
        self.pool = ServerPool(endpoints)
        self.top_logprobs = top_logprobs
        self.stream_interval = stream_interval
        self.stream_max_delay_s = stream_max_delay_s
        self.api_key = api_key
        self.request_timeout_s = request_timeout_s
        self.max_retries = max_retries
        self.context_length = context_length
        self.default_max_new_tokens = default_max_new_tokens
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.connect_timeout_s = connect_timeout_s
        self.admin_timeout_s = admin_timeout_s
        self.request_hook = request_hook
        self._http: aiohttp.ClientSession | None = None
        self._encoder = msgspec.json.Encoder()
        self._decoder = msgspec.json.Decoder(GenerateResponse)
        self._error_decoder = msgspec.json.Decoder(ErrorResponse)
        self._background: set[asyncio.Task[Any]] = set()
        self.max_connections = max_connections
        self.http1 = Http1Pool(max_connections)
        self._gen_headers = self.request_headers(True)

    @property
    def endpoints(self) -> list[str]:
        return [s.url for s in self.pool.servers]

    def forget_session(self, session_id: str) -> None:
        """The session ended: drop its sticky server (the proxy calls this when it closes a session)."""
        self.pool.forget(session_id)

    def http(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            connector = aiohttp.TCPConnector(limit=self.max_connections, keepalive_timeout=60.0)
            self._http = aiohttp.ClientSession(connector=connector, trust_env=False)
        return self._http

    async def close(self) -> None:
        if self._background:
            await asyncio.wait(list(self._background), timeout=2.0)
        self.http1.close()
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def __aenter__(self) -> SGLangEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def build_request(
        self,
        input_ids: list[int],
        sampling: SamplingParams,
        *,
        stop_token_ids: list[int] | None = None,
        rid: str | None = None,
    ) -> GenerateRequest:
        if not input_ids:
            raise EngineError("generate needs a non-empty list of prompt token ids, got an empty one")
        requested = sampling.max_new_tokens if sampling.max_new_tokens is not None else self.default_max_new_tokens
        max_new = new_token_limit(len(input_ids), self.context_length, requested)
        wire = WireSampling(
            max_new_tokens=max_new,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            top_k=sampling.top_k,
            stop=list(sampling.stop) or None,
            stop_token_ids=list(stop_token_ids) if stop_token_ids else None,
            skip_special_tokens=False,
            spaces_between_special_tokens=False,
            no_stop_trim=True,
            sampling_seed=sampling.seed,
        )
        return GenerateRequest(
            input_ids=input_ids,
            sampling_params=wire,
            rid=rid,
            return_logprob=True,
            logprob_start_len=-1,
            top_logprobs_num=self.top_logprobs or None,
            stream=False,
        )

    async def generate(
        self,
        input_ids: list[int],
        sampling: SamplingParams,
        *,
        session_id: str | None = None,
        stop_token_ids: list[int] | None = None,
        deadline: float | None = None,
    ) -> GenerateResult:
        request = self.build_request(input_ids, sampling, stop_token_ids=stop_token_ids)
        attempts = self.attempts("generate", session_id, deadline)
        async for attempt, server, remaining in attempts:
            url = server.url
            request.rid = new_rid()
            body = self._encoder.encode(request)
            if self.request_hook is not None:
                self.request_hook(body)
            try:
                status, raw = await self._post(server, body, request.rid, remaining)
            except aiohttp.ClientError as err:  # includes connect timeouts
                attempts.failed(attempt, server, request.rid, f"{type(err).__name__}: {err}")
                continue
            if status >= 500:
                attempts.failed(attempt, server, request.rid, f"HTTP {status}: {raw[:300].decode(errors='replace')}")
                continue
            self.pool.mark_ok(server)
            if status != 200:
                raise self.client_error(status, raw, url, request.rid, len(input_ids))
            return self._result(raw, url, request.rid, attempt)
        raise attempts.exhausted()

    def attempts(self, what: str, session_id: str | None, deadline: float | None) -> Attempts:
        """The attempts of one call (routing, backoff, deadline; see ``inference.attempts``)."""
        return Attempts(self.pool, what, session_id=session_id,
                        deadline=deadline if deadline is not None else time.monotonic() + self.request_timeout_s,
                        max_retries=self.max_retries, backoff_s=self.backoff_s, max_backoff_s=self.max_backoff_s)

    async def teacher_force(
        self,
        input_ids: list[int],
        forced_ids: list[int],
        *,
        session_id: str | None = None,
        deadline: float | None = None,
    ) -> ForcedResult:
        """The model's logprobs of ``forced_ids`` after ``input_ids`` (one prefill; see ``inference.forcing``).

        Routing, retries and deadlines as :meth:`generate`."""
        request = forcing_request(input_ids, forced_ids)
        n = len(request.input_ids or ())
        if self.context_length is not None and n > self.context_length:
            raise ContextOverflow(
                f"prompt and forced tokens hold {n} tokens; the model's context length is {self.context_length}",
                prompt_tokens=n, context_length=self.context_length,
            )
        attempts = self.attempts("teacher forcing", session_id, deadline)
        async for attempt, server, remaining in attempts:
            request.rid = new_rid()
            body = self._encoder.encode(request)
            if self.request_hook is not None:
                self.request_hook(body)
            try:
                status, raw = await self._post(server, body, request.rid, remaining)
            except aiohttp.ClientError as err:
                attempts.failed(attempt, server, request.rid, f"{type(err).__name__}: {err}")
                continue
            if status >= 500:
                attempts.failed(attempt, server, request.rid, f"HTTP {status}: {raw[:300].decode(errors='replace')}")
                continue
            self.pool.mark_ok(server)
            where = f"{server.url} (rid {request.rid})"
            if status != 200:
                raise self.client_error(status, raw, server.url, request.rid, n)
            try:
                resp = self._decoder.decode(raw)
            except msgspec.DecodeError as err:
                raise EngineError(f"{where} sent a /generate response that does not decode: {err}") from None
            meta = resp.meta_info
            return ForcedResult(logprobs=forced_logprobs(resp, len(input_ids), forced_ids, where),
                                prompt_tokens=meta.prompt_tokens, cached_tokens=meta.cached_tokens,
                                weight_version=meta.weight_version, server=server.url, rid=request.rid,
                                attempts=attempt)
        raise attempts.exhausted()

    async def open_stream(
        self,
        input_ids: list[int],
        sampling: SamplingParams,
        *,
        session_id: str | None = None,
        stop_token_ids: list[int] | None = None,
        deadline: float | None = None,
    ) -> EngineStream:
        """The same call as :meth:`generate` with ``stream: true``: iterate the returned stream for the sampled
        ids and logprobs as they come, then read its ``result``; ``close()`` it always (see ``inference.stream``)."""
        return await open_stream(self, input_ids, sampling, session_id=session_id, stop_token_ids=stop_token_ids,
                                 deadline=deadline)

    async def _post(self, server: ServerState, body: bytes, rid: str, remaining: float) -> tuple[int, bytes]:
        server.inflight += 1
        try:
            url = f"{server.url}/generate"
            connect_s = min(self.connect_timeout_s, remaining)
            if Http1Pool.supports(url):
                if self._gen_headers.get("Authorization") != (f"Bearer {self.api_key}" if self.api_key else None):
                    self._gen_headers = self.request_headers(True)
                return await self.http1.post(url, body, self._gen_headers, remaining, connect_s)
            timeout = aiohttp.ClientTimeout(total=remaining, sock_connect=connect_s)
            async with self.http().post(url, data=body, headers=self.request_headers(True), timeout=timeout) as resp:
                return resp.status, await resp.read()
        except aiohttp.ConnectionTimeoutError:
            raise
        except TimeoutError:
            self.abort_in_background(server.url, rid)
            raise EngineTimeout(
                f"generate at {server.url} (rid {rid}) passed its deadline after {remaining:.1f}s; request aborted"
            ) from None
        except asyncio.CancelledError:
            self.abort_in_background(server.url, rid)
            raise
        finally:
            server.inflight -= 1

    def client_error(self, status: int, raw: bytes, url: str, rid: str, n_prompt: int) -> EngineError:
        try:
            err = self._error_decoder.decode(raw).error
            message = err if isinstance(err, str) else err.message
        except msgspec.DecodeError:
            message = raw[:500].decode(errors="replace")
        text = f"{url} refused generate (rid {rid}, {n_prompt} prompt tokens): HTTP {status}: {message}"
        if _is_context_error(message):
            return ContextOverflow(text, prompt_tokens=n_prompt, context_length=self.context_length)
        return EngineError(text)

    def _result(self, raw: bytes, url: str, rid: str, attempts: int) -> GenerateResult:
        try:
            resp = self._decoder.decode(raw)
        except msgspec.DecodeError as err:
            raise EngineError(f"{url} sent a /generate response that does not decode (rid {rid}): {err}") from None
        meta = resp.meta_info
        entries = meta.output_token_logprobs
        if entries is None:
            raise EngineError(f"{url} sent no meta_info.output_token_logprobs (rid {rid}); is return_logprob ignored?")
        if len(entries) != meta.completion_tokens:
            raise EngineError(
                f"{url} (rid {rid}): output_token_logprobs has {len(entries)} entries but completion_tokens is "
                f"{meta.completion_tokens}"
            )
        missing = next((i for i, e in enumerate(entries) if e[0] is None), None)
        if missing is not None:
            raise EngineError(
                f"{url} (rid {rid}): output_token_logprobs[{missing}] (token id {entries[missing][1]}) has no "
                "logprob; a sampled token without its logprob cannot be trained on"
            )
        ids = np.fromiter((e[1] for e in entries), dtype=np.int32, count=len(entries))
        lps = np.fromiter((e[0] for e in entries), dtype=np.float32, count=len(entries))
        if resp.output_ids and len(resp.output_ids) == len(ids) and resp.output_ids != ids.tolist():
            log.warning("%s (rid %s): output_ids differ from the ids in output_token_logprobs; using the latter",
                        url, rid)
        if meta.finish_reason is None:
            raise EngineError(f"{url} (rid {rid}) returned a finished response without a finish_reason")
        reason, matched, abort_message = finish_fields(meta.finish_reason)
        top_ids, top_lps = top_arrays(meta.output_top_logprobs, len(ids), self.top_logprobs)
        return GenerateResult(
            output_ids=ids,
            output_logprobs=lps,
            output_top_ids=top_ids,
            output_top_logprobs=top_lps,
            finish_reason=reason,
            matched_stop=matched,
            prompt_tokens=meta.prompt_tokens,
            completion_tokens=meta.completion_tokens,
            cached_tokens=meta.cached_tokens,
            weight_version=meta.weight_version,
            server=url,
            rid=rid,
            text=resp.text,
            abort_message=abort_message,
            attempts=attempts,
        )

    def abort_in_background(self, url: str, rid: str) -> None:
        try:
            task = asyncio.get_running_loop().create_task(self.abort(url, rid))
        except RuntimeError:
            return
        self._background.add(task)
        task.add_done_callback(self._background.discard)
