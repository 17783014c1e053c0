"""Async client of SGLang's native ``POST /generate``: token ids in, sampled ids and logprobs out.

One pooled aiohttp session (``trust_env=False``: cluster proxy variables must not reroute intra-cluster
traffic). Several servers are routed by :class:`~polar_hpc.engine.routing.ServerPool`. Each attempt uses a
fresh ``rid`` (SGLang refuses an rid already in flight), retries go to another server on connection errors
and 5xx with exponential backoff, and every call has a deadline. A cancelled or timed-out call aborts its
request on the server (``/abort_request``) so it does not hold a KV-cache slot.

One retry loop (:meth:`SGLangEngine._send`) serves the three calls, each described by a :class:`Call`:
``generate``, ``teacher_force`` and the streamed ``open_stream`` (whose stream reader is ``engine.stream``).
Deadlines are absolute ``time.monotonic()`` values (the clock asyncio's loop uses on Linux).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import msgspec

from polar_hpc.config.run import InferenceConfig, ProxyConfig
from polar_hpc.engine.admin import EngineAdmin
from polar_hpc.engine.attempts import Attempts
from polar_hpc.engine.errors import ContextOverflow, EngineError, EngineTimeout
from polar_hpc.engine.forcing import ForcedResult, forced_logprobs, forcing_request
from polar_hpc.engine.http1 import Http1Pool, Http1Stream
from polar_hpc.engine.limits import new_token_limit
from polar_hpc.engine.protocol import (
    ErrorResponse,
    GenerateRequest,
    GenerateResponse,
    WireSampling,
    new_rid,
)
from polar_hpc.engine.result import GenerateResult, whole_result
from polar_hpc.engine.routing import ServerPool, ServerState
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.engine.stream import EngineStream, read_all
from polar_hpc.log import get_logger
from polar_hpc.wire.calls import SamplingParams

log = get_logger("engine")

_DEFAULTS = EngineSettings()


def _is_context_error(message: str) -> bool:
    m = message.lower()
    return "context length" in m or "maximum context" in m or "longer than the model" in m


class Call(msgspec.Struct, kw_only=True):
    """One engine call as the retry loop sees it: the request (a fresh ``rid`` per attempt), what errors call it,
    its session (sticky routing), its deadline (None: ``request_timeout_s`` from now), the prompt's length (named
    in a refusal) and whether it streams."""

    request: GenerateRequest
    what: str
    session_id: str | None = None
    deadline: float | None = None
    n_prompt: int = 0
    stream: bool = False


class SGLangEngine(EngineAdmin):
    """Client of one or more SGLang (or reference) servers; see ``docs/interfaces.md``.

    ``settings``: timeouts, retries, limits and stream cadence (:class:`EngineSettings`, whole). ``api_key``: the
    servers' key (SGLang's ``--api-key``), sent as ``Authorization: Bearer`` on every call. ``request_hook``
    receives every ``/generate`` body before it is sent (contract tests validate them against SGLang's schema).
    """

    @classmethod
    def from_config(cls, endpoints: list[str], inference: InferenceConfig, proxy: ProxyConfig, *,
                    api_key: str | None) -> SGLangEngine:
        """The engine client of a proxy (a gateway rank's, ``polar-hpc proxy``'s) as the recipe's sections say."""
        return cls(endpoints, EngineSettings.from_config(inference, proxy), api_key=api_key)

    def __init__(self, endpoints: list[str], settings: EngineSettings = _DEFAULTS, *, api_key: str | None = None,
                 request_hook: Callable[[bytes], None] | None = None) -> None:
        self.pool = ServerPool(endpoints)
        self.settings = settings
        self.api_key = api_key
        self.request_hook = request_hook
        self._http: aiohttp.ClientSession | None = None
        self._encoder = msgspec.json.Encoder()
        self._decoder = msgspec.json.Decoder(GenerateResponse)
        self._error_decoder = msgspec.json.Decoder(ErrorResponse)
        self._background: set[asyncio.Task[Any]] = set()
        self.http1 = Http1Pool(settings.max_connections)
        self._gen_headers = self.request_headers(True)

    @property
    def endpoints(self) -> list[str]:
        return [s.url for s in self.pool.servers]

    def forget_session(self, session_id: str) -> None:
        """The session ended: drop its sticky server (the proxy calls this when it closes a session)."""
        self.pool.forget(session_id)

    def http(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            connector = aiohttp.TCPConnector(limit=self.settings.max_connections, keepalive_timeout=60.0)
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
        st = self.settings
        requested = sampling.max_new_tokens if sampling.max_new_tokens is not None else st.default_max_new_tokens
        max_new = new_token_limit(len(input_ids), st.context_length, requested)
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
            top_logprobs_num=st.top_logprobs or None,
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
        call = Call(request=request, what="generate", session_id=session_id, deadline=deadline,
                    n_prompt=len(input_ids))
        attempt, server, raw, _ = await self._send(call)
        try:
            resp = self._decoder.decode(raw)
        except msgspec.DecodeError as err:
            raise EngineError(f"{server.url} sent a /generate response that does not decode (rid {request.rid}): "
                              f"{err}") from None
        return whole_result(resp, server.url, request.rid or "", attempt, self.settings.top_logprobs)

    async def teacher_force(
        self,
        input_ids: list[int],
        forced_ids: list[int],
        *,
        session_id: str | None = None,
        deadline: float | None = None,
    ) -> ForcedResult:
        """The model's logprobs of ``forced_ids`` after ``input_ids`` (one prefill; see ``engine.forcing``).

        Routing, retries and deadlines as :meth:`generate`."""
        request = forcing_request(input_ids, forced_ids)
        n = len(request.input_ids or ())
        context_length = self.settings.context_length
        if context_length is not None and n > context_length:
            raise ContextOverflow(
                f"prompt and forced tokens hold {n} tokens; the model's context length is {context_length}",
                prompt_tokens=n, context_length=context_length,
            )
        call = Call(request=request, what="teacher forcing", session_id=session_id, deadline=deadline, n_prompt=n)
        attempt, server, raw, _ = await self._send(call)
        where = f"{server.url} (rid {request.rid})"
        try:
            resp = self._decoder.decode(raw)
        except msgspec.DecodeError as err:
            raise EngineError(f"{where} sent a /generate response that does not decode: {err}") from None
        meta = resp.meta_info
        return ForcedResult(logprobs=forced_logprobs(resp, len(input_ids), forced_ids, where),
                            prompt_tokens=meta.prompt_tokens, cached_tokens=meta.cached_tokens,
                            weight_version=meta.weight_version, server=server.url, rid=request.rid or "",
                            attempts=attempt)

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
        ids and logprobs as they come, then read its ``result``; ``close()`` it always (see ``engine.stream``).
        Connection errors and 5xx before the response head are retried as ``generate`` does."""
        request = self.build_request(input_ids, sampling, stop_token_ids=stop_token_ids)
        request.stream = True
        request.sampling_params.stream_interval = self.settings.stream_interval
        call = Call(request=request, what="streamed generate", session_id=session_id, deadline=deadline,
                    n_prompt=len(input_ids), stream=True)
        _, _, _, stream = await self._send(call)
        assert stream is not None
        return stream

    def attempts(self, what: str, session_id: str | None, deadline: float | None) -> Attempts:
        """The attempts of one call (routing, backoff, deadline; see ``engine.attempts``)."""
        st = self.settings
        return Attempts(self.pool, what, session_id=session_id,
                        deadline=deadline if deadline is not None else time.monotonic() + st.request_timeout_s,
                        max_retries=st.max_retries, backoff_s=st.backoff_s, max_backoff_s=st.max_backoff_s)

    async def _send(self, call: Call) -> tuple[int, ServerState, bytes, EngineStream | None]:
        """The retry loop of every call: ``(attempt, server, body, None)`` of the first 200 answer, or for a
        streamed call ``(attempt, server, b"", stream)`` once its response head said 200. Connection errors and
        5xx go to the next attempt; any other status raises :meth:`client_error`."""
        attempts = self.attempts(call.what, call.session_id, call.deadline)
        request = call.request
        async for attempt, server, remaining in attempts:
            request.rid = rid = new_rid()
            body = self._encoder.encode(request)
            if self.request_hook is not None:
                self.request_hook(body)
            try:
                if call.stream:
                    status, raw, head = await self._open(server, body, rid, remaining, attempts.deadline)
                else:
                    status, raw = await self._post(server, body, rid, remaining)
                    head = None
            except aiohttp.ClientError as err:  # includes connect timeouts
                attempts.failed(attempt, server, rid, f"{type(err).__name__}: {err}")
                continue
            if status >= 500:
                attempts.failed(attempt, server, rid, f"HTTP {status}: {raw[:300].decode(errors='replace')}")
                continue
            if head is not None:  # the stream marks its server ok when it finishes
                return attempt, server, b"", EngineStream(self, server, rid, head, attempts.deadline, attempt)
            self.pool.mark_ok(server)
            if status != 200:
                raise self.client_error(status, raw, server.url, rid, call.n_prompt)
            return attempt, server, raw, None
        raise attempts.exhausted()

    async def _post(self, server: ServerState, body: bytes, rid: str, remaining: float) -> tuple[int, bytes]:
        server.inflight += 1
        try:
            url = f"{server.url}/generate"
            connect_s = min(self.settings.connect_timeout_s, remaining)
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

    async def _open(self, server: ServerState, body: bytes, rid: str, remaining: float,
                    deadline: float) -> tuple[int, bytes, Http1Stream | None]:
        """Send a streamed call: ``(200, b"", body)`` once the response head says 200 (the server stays counted in
        flight until the stream closes), else ``(status, whole body, None)``."""
        url = f"{server.url}/generate"
        if not Http1Pool.supports(url):
            raise EngineError(f"streamed generate needs a plain http:// server URL, got {server.url}")
        server.inflight += 1
        try:
            resp = await self.http1.stream(url, body, self.request_headers(True), remaining,
                                           min(self.settings.connect_timeout_s, remaining))
        except aiohttp.ClientError:
            server.inflight -= 1
            raise
        except TimeoutError:
            server.inflight -= 1
            self.abort_in_background(server.url, rid)
            raise EngineTimeout(
                f"streamed generate at {server.url} (rid {rid}) sent no response head before its deadline; "
                "request aborted"
            ) from None
        except asyncio.CancelledError:
            server.inflight -= 1
            self.abort_in_background(server.url, rid)
            raise
        if resp.status == 200:
            return 200, b"", resp
        raw = await read_all(resp, deadline)
        resp.close()
        server.inflight -= 1
        return resp.status, raw, None

    def client_error(self, status: int, raw: bytes, url: str, rid: str, n_prompt: int) -> EngineError:
        try:
            err = self._error_decoder.decode(raw).error
            message = err if isinstance(err, str) else err.message
        except msgspec.DecodeError:
            message = raw[:500].decode(errors="replace")
        text = f"{url} refused generate (rid {rid}, {n_prompt} prompt tokens): HTTP {status}: {message}"
        if _is_context_error(message):
            return ContextOverflow(text, prompt_tokens=n_prompt, context_length=self.settings.context_length)
        return EngineError(text)
