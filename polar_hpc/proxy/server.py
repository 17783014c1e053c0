"""The model-API proxy: one aiohttp app answering Anthropic, OpenAI Chat/Responses and Google clients.

Every route is a catch-all: the provider comes from the path, then the headers, then the body. The API key
names the session (unknown key: the provider's 401, nothing recorded). Streaming requests stream from the
engine as it samples (``proxy.live``); with ``stream_upstream=False`` they get one engine call and a
synthesized SSE stream, which, when the engine is slow, starts early with keep-alives (SSE comments; blank
lines for Google) and an error then arrives as the provider's in-stream error event.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import socket
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from aiohttp import web

from polar_hpc.chat.template import ChatTemplate
from polar_hpc.config.run import GatewayConfig, InferenceConfig, ProxyConfig
from polar_hpc.log import get_logger
from polar_hpc.policy.oracle import OraclePolicy
from polar_hpc.policy.script import OracleScript
from polar_hpc.providers import provider_api
from polar_hpc.providers.detect import UNDETECTED, Route, body_provider, header_provider, request_key, route_by_path
from polar_hpc.providers.errors import Failed, ProxyError, bad_request
from polar_hpc.providers.reply import SSE_HEADERS, Reply
from polar_hpc.providers.request import Normalized
from polar_hpc.providers.side import is_side_request
from polar_hpc.proxy.capture import SessionLog
from polar_hpc.proxy.generate import Engine, Generator
from polar_hpc.proxy.live import (
    LiveSink,
    StreamingEngine,
    answer_live,
    stream_refusal,
)
from polar_hpc.proxy.prompt import PromptBuilder
from polar_hpc.proxy.session import (
    JSON_CT,
    ProxySession,
    error_response,
    json_response,
    stream_error_event,
)
from polar_hpc.proxy.settings import ProxySettings
from polar_hpc.util.fs import safe_name
from polar_hpc.wire.calls import CompletionRecord, Provider

if TYPE_CHECKING:
    from aiohttp.abc import AbstractStreamWriter
    from aiohttp.http_parser import RawRequestMessage
    from aiohttp.streams import StreamReader
    from aiohttp.web_protocol import RequestHandler

log = get_logger("proxy")

_DEFAULTS = ProxySettings()
SANDBOX_BACKLOG = 128
"""Backlog of a sandbox's handed-off listener (the shim's own ``listen``, ``uds_forward.BACKLOG``, applies first)."""
_DECODE = msgspec.json.Decoder()
_ENC = msgspec.json.Encoder()


class ProxyServer:
    """See ``docs/interfaces.md``; its knobs are one :class:`~polar_hpc.proxy.settings.ProxySettings`."""

    def __init__(self, template: ChatTemplate, engine: Engine, settings: ProxySettings = _DEFAULTS, *,
                 records_dir: str | Path | None = None) -> None:
        self.settings = settings
        self.template = template
        self.model_name = settings.model_name
        self.render_mode = settings.render_mode
        self.gen = Generator(template, engine, settings)
        self.records_dir = Path(records_dir) if records_dir is not None else None
        served = settings.served_models
        self.served = frozenset([settings.model_name, *served]) if served is not None else None
        self.max_body_bytes = settings.max_body_bytes
        self.session_memory_bytes = settings.session_memory_bytes
        self.sse_keepalive_s = settings.sse_keepalive_s
        self.measure_divergence = settings.measure_divergence
        refusal = stream_refusal(engine) if settings.stream_upstream else None
        if refusal is not None:
            log.warning("proxy.stream_upstream is on, but %s: streaming requests get one engine call and a "
                        "synthesized stream", refusal)
        self.stream_upstream = settings.stream_upstream and isinstance(engine, StreamingEngine) and refusal is None
        """Streaming requests stream from the engine as it samples (else: one call, then a synthesized stream)."""
        self._checked_engine: object = None
        self._own_spill_dir = self.records_dir is None
        """The spill dir is a temporary one of this server (removed by :meth:`stop`), not ``records_dir``."""
        self._spill_dir = self.records_dir or Path(tempfile.gettempdir()) / f"polar-proxy-spill-{secrets.token_hex(4)}"
        self._sessions: dict[str, ProxySession] = {}
        self._runner: web.ServerRunner | None = None

    @classmethod
    def from_config(cls, template: ChatTemplate, engine: Engine, *, inference: InferenceConfig, proxy: ProxyConfig,
                    gateway: GatewayConfig, records_dir: Path | None = None) -> ProxyServer:
        """The proxy as the recipe's sections say (``ProxySettings.from_config``), for a gateway rank and
        ``polar-hpc proxy`` alike."""
        return cls(template, engine, ProxySettings.from_config(inference, proxy, gateway), records_dir=records_dir)

    # -- sessions ----------------------------------------------------------------------------------
    def open_session(self, session_id: str, api_key: str | None = None, oracle: OracleScript | None = None,
                     max_turns: int | None = None) -> str:
        """Register a session; returns the API key its harness must send (unguessable unless given).

        ``oracle``: the session's agent calls are answered by the oracle policy with this script (forced and
        scored by the engine) instead of being sampled. ``max_turns``: the agent calls it may make (side requests
        not counted); a call past them is refused and ``wait_turn_limit`` returns (for harnesses without a turn
        limit of their own)."""
        key = api_key or f"sk-polar-{secrets.token_urlsafe(24)}"
        if key in self._sessions:
            raise ValueError(f"API key already names session {self._sessions[key].session_id!r}")
        jsonl = self.records_dir / f"{safe_name(session_id)}.jsonl" if self.records_dir is not None else None
        if jsonl is not None:
            jsonl.parent.mkdir(parents=True, exist_ok=True)
        slog = SessionLog(
            session_id, memory_limit_bytes=self.session_memory_bytes, spill_dir=self._spill_dir, jsonl_path=jsonl
        )
        builder = PromptBuilder(self.template, self.render_mode, measure_divergence=self.measure_divergence)
        policy = OraclePolicy(oracle, self.template, self.gen.tool_parser) if oracle is not None else None
        self._sessions[key] = ProxySession(session_id, slog, builder, policy, max_turns)
        return key

    def close_session(self, api_key: str) -> list[CompletionRecord]:
        """Forget the session; its records in arrival order. Later calls with its key get a 401."""
        s = self._sessions.pop(api_key, None)
        if s is None:
            raise KeyError("no open session has this API key")
        self.gen.engine.forget_session(s.session_id)
        return s.log.close()

    def engine_lost(self, api_key: str) -> str | None:
        """Why a call of this open session found no model server (None: none did)."""
        s = self._sessions.get(api_key)
        return None if s is None else s.engine_lost

    async def wait_engine_lost(self, api_key: str) -> str:
        """Returns when a call of this open session finds no model server: why."""
        s = self._sessions[api_key]
        await s.lost.wait()
        return s.engine_lost or ""

    def turn_limited(self, api_key: str) -> int | None:
        """The ``max_turns`` this open session made a call past (refused); None: it did not."""
        s = self._sessions.get(api_key)
        return s.max_turns if s is not None and s.turn_limit.is_set() else None

    async def wait_turn_limit(self, api_key: str) -> None:
        """Returns when this open session makes an agent call past its ``max_turns`` (refused)."""
        await self._sessions[api_key].turn_limit.wait()

    def session_ids(self) -> list[str]:
        return [s.session_id for s in self._sessions.values()]

    # -- lifecycle ---------------------------------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0, unix_path: str | None = None) -> str:
        _ = self.template.byte_table  # built now, not at the first reply
        # aiohttp's low-level server: the handler routes by itself (``detect.route_by_path``), so an Application's
        # router and middleware chain would only add a step to every request
        server = web.Server(self._handle, request_factory=self._make_request, access_log=None)
        self._runner = web.ServerRunner(server, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, backlog=4096)
        await site.start()
        bound = next(a[1] for a in self._runner.addresses if isinstance(a, tuple))  # port 0: the one chosen
        if unix_path is not None:
            await web.UnixSite(self._runner, unix_path).start()
        return f"http://{host}:{bound}"

    async def serve_listener(self, listener: socket.socket) -> Callable[[], Awaitable[None]]:
        """Serve a listening socket handed out of a sandbox (``runtime.bridge = "handoff"``) like the proxy's own
        port, until the returned coroutine function is awaited."""
        if self._runner is None:
            raise RuntimeError("proxy: serve_listener() before start()")
        site = web.SockSite(self._runner, listener, backlog=SANDBOX_BACKLOG)
        await site.start()
        return site.stop

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._own_spill_dir:
            shutil.rmtree(self._spill_dir, ignore_errors=True)  # open spill files stay readable until closed

    # -- requests ----------------------------------------------------------------------------------
    def _make_request(self, message: RawRequestMessage, payload: StreamReader, protocol: RequestHandler,
                      writer: AbstractStreamWriter, task: asyncio.Task[None]) -> web.BaseRequest:
        return web.BaseRequest(message, payload, protocol, writer, task, asyncio.get_running_loop(),
                               client_max_size=self.max_body_bytes)

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        received = time.time()
        route = route_by_path(request.method, request.path, request.headers)
        fallback: Provider = (route.provider if route else None) or header_provider(request.headers) or UNDETECTED
        if route is not None and route.op == "health":
            return web.Response(status=200) if request.method == "HEAD" else json_response(b'{"status":"ok"}')
        try:
            raw = await request.read()
        except web.HTTPRequestEntityTooLarge:
            too_large = ProxyError("too_large", f"request body exceeds {self.max_body_bytes} bytes")
            return error_response(fallback, too_large)
        body: Any = None
        if raw and request.method == "POST":
            try:
                body = _DECODE.decode(raw)
            except msgspec.DecodeError as err:
                return error_response(fallback, bad_request(f"request body is not valid JSON: {err}"))
        if route is None:
            provider = header_provider(request.headers) or body_provider(body)
            if request.method != "POST" or provider is None:
                msg = f"no such endpoint: {request.method} {request.path}"
                return error_response(fallback, ProxyError("not_found", msg))
            route = Route(provider, "generate")
        session = self._session(request)
        if session is None:
            return error_response(route.provider, ProxyError("auth", "invalid API key: this key names no open session"))
        if route.op == "models":
            return self._models(route.provider)
        if not isinstance(body, dict):
            kind = "empty" if body is None else type(body).__name__
            msg = f"expected a JSON object as the request body, got {kind}"
            return error_response(route.provider, bad_request(msg))
        try:
            norm = provider_api(route.provider).normalize(route, body)
            self._check_model(norm)
        except ProxyError as err:
            return error_response(route.provider, err)
        except (TypeError, ValueError, AttributeError, KeyError) as err:
            log.debug("request of %s did not normalize", session.session_id, exc_info=True)
            msg = f"request could not be read: {type(err).__name__}: {err}"
            return error_response(route.provider, bad_request(msg))
        self.gen.prepare(norm)
        if route.op == "count_tokens":
            return self._count(route.provider, session, norm)
        if session.max_turns is not None and not session.take_turn(is_side_request(norm.canonical)):
            msg = f"agent.max_turns={session.max_turns} reached: this session takes no more model calls"
            return error_response(route.provider, bad_request(msg))
        index = session.log.reserve()
        if norm.canonical.stream and self.stream_upstream and session.oracle is None:  # forced replies: one SSE body
            return await self._stream_live(request, route.provider, session, index, norm, raw, received)
        call = self.gen.complete(
            norm,
            session.builder,
            provider=route.provider,
            session_id=session.session_id,
            index=index,
            raw_request=raw,
            received=received,
            oracle=session.oracle,
        )
        if norm.canonical.stream:
            return await self._stream(request, route.provider, session, index, norm, call)
        try:
            reply, rec = await call
        except BaseException as err:
            return self._fail(route.provider, session, index, err)
        data = provider_api(route.provider).json_body(reply)
        rec.timings.responded = time.time()
        session.log.finish(index, rec)
        return web.Response(body=data, content_type=JSON_CT)

    def _fail(self, provider: Provider, session: ProxySession, index: int, err: BaseException) -> web.Response:
        session.note(err)
        if isinstance(err, Failed):
            session.log.finish(index, err.record)
            return error_response(provider, err.error)
        session.log.finish(index, None)
        if isinstance(err, ProxyError):
            return error_response(provider, err)
        if not isinstance(err, Exception):
            raise err
        log.exception("call %d of session %s failed", index, session.session_id)
        return error_response(provider, ProxyError("engine_error", f"internal error: {type(err).__name__}: {err}"))

    async def _stream(
        self, request: web.BaseRequest, provider: Provider, session: ProxySession, index: int, norm: Normalized,
        call: Awaitable[tuple[Reply, CompletionRecord]],
    ) -> web.StreamResponse:
        """Answer a streaming call. Whatever happens to the client (it may disconnect during the keep-alives),
        the reserved ``index`` is finished: otherwise the session log would hold every later record forever."""
        task = asyncio.ensure_future(call)
        finished = False
        resp: web.StreamResponse | None = None
        try:
            while True:
                done, _ = await asyncio.wait((task,), timeout=self.sse_keepalive_s)
                if done:
                    break
                if resp is None:
                    resp = web.StreamResponse(headers=SSE_HEADERS)
                    await resp.prepare(request)
                await resp.write(provider_api(provider).bare_keepalive)
            err = task.exception()
            if err is not None:
                finished = True
                failed = self._fail(provider, session, index, err)
                if resp is None:
                    return failed
                perr = err.error if isinstance(err, Failed) else err if isinstance(err, ProxyError) else None
                perr = perr or ProxyError("engine_error", str(err))
                await resp.write(stream_error_event(provider, perr, norm.options.model))
                await resp.write_eof()
                return resp
            reply, rec = task.result()
            data = provider_api(provider).sse_body(reply)
            rec.timings.responded = time.time()
            finished = True
            session.log.finish(index, rec)
            if resp is None:
                return web.Response(body=data, headers=SSE_HEADERS)
            await resp.write(data)
            await resp.write_eof()
            return resp
        finally:
            if not finished:
                self._abandon(session, index, task)

    async def _stream_live(self, request: web.BaseRequest, provider: Provider, session: ProxySession, index: int,
                           norm: Normalized, raw: bytes, received: float) -> web.StreamResponse:
        sink = LiveSink(self._streaming_engine(), provider, norm, self.template, self.gen.tool_parser)

        def call(s: LiveSink) -> Awaitable[tuple[Reply, CompletionRecord]]:
            return self.gen.complete(norm, session.builder, provider=provider, session_id=session.session_id,
                                     index=index, raw_request=raw, received=received, sink=s)

        def stream_error(err: BaseException, model: str) -> bytes:
            session.note(err)
            perr = err.error if isinstance(err, Failed) else err if isinstance(err, ProxyError) else None
            return stream_error_event(provider, perr or ProxyError("engine_error", str(err)), model)

        return await answer_live(
            request, sink, call, keepalive_s=self.sse_keepalive_s,
            finish=lambda rec: session.log.finish(index, rec),
            fail=lambda err: self._fail(provider, session, index, err), stream_error=stream_error,
        )

    def _streaming_engine(self) -> StreamingEngine:
        """The engine as a streaming one (checked once per engine: a protocol ``isinstance`` costs ≈50 µs)."""
        engine = self.gen.engine
        if self._checked_engine is not engine:
            if not isinstance(engine, StreamingEngine):
                raise TypeError(f"proxy.stream_upstream needs an engine that streams; {type(engine).__name__} "
                                "has no open_stream")
            self._checked_engine = engine
        return engine  # type: ignore[return-value]  # checked above, or on an earlier call

    def _abandon(self, session: ProxySession, index: int, task: asyncio.Future[tuple[Reply, CompletionRecord]]) -> None:
        """The client went away before its answer: keep the record when the engine call completed, else cancel
        the call (the engine aborts its request on the server) and finish the index without one."""
        if task.done() and not task.cancelled():
            err = task.exception()
            if err is None:
                session.log.finish(index, task.result()[1])
            else:
                session.log.finish(index, err.record if isinstance(err, Failed) else None)
        else:
            task.cancel()
            session.log.finish(index, None)
        log.info("client of call %d of session %s disconnected before its answer", index, session.session_id)

    def _session(self, request: web.BaseRequest) -> ProxySession | None:
        for key in request_key(request.headers, request.query):
            s = self._sessions.get(key)
            if s is not None:
                return s
        return None

    def _check_model(self, norm: Normalized) -> None:
        model = norm.canonical.model
        if self.served is not None and model and model not in self.served:
            raise ProxyError("not_found", f"model {model!r} is not served here; served: {sorted(self.served)}")

    def _count(self, provider: Provider, session: ProxySession, norm: Normalized) -> web.Response:
        try:
            n = len(session.builder.canonical_ids(norm.canonical))
        except (ValueError, TypeError) as err:
            msg = f"the model's chat template cannot render this conversation: {err}"
            return error_response(provider, bad_request(msg))
        return json_response(_ENC.encode(provider_api(provider).token_count(n)))

    def _models(self, provider: Provider) -> web.Response:
        data = provider_api(provider).models(self.model_name, self.gen.context_length, self.gen.max_new_tokens)
        return json_response(_ENC.encode(data))
