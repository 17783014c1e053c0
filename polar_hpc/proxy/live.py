"""A streaming request answered while the engine samples (``proxy.stream_upstream``).

The call runs through :meth:`Generator.complete` exactly as a non-streaming one, with a :class:`LiveSink`
in place of the engine's ``generate``: the sink opens a streamed ``/generate``, shapes each delta into the
provider's events for the client, and returns the engine's result, so the record is built by the same code
from the same ids and logprobs. The call runs in the request's own task (:func:`answer_live`), and the sink
writes each event to the client in the step that read its token (:class:`LiveResponse`: the head goes out with
the first bytes). A timer sends the provider's keep-alive whenever the stream has been silent for the
keep-alive interval (queueing, long prefill, hidden reasoning, a tool call held until it parses); a client that
goes away aborts the engine request: the call then ends with the tokens sampled so far and is recorded with
``finish_reason`` ``abort``. A write to a client that is gone fails at once, so only a stream that has been silent
for :data:`WATCH_INTERVAL_S` has its connection looked at (the same timer): a stream that is writing costs no
wake-up to watch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from aiohttp import web

from polar_hpc.chat.live_text import Detokenizer, Shaper
from polar_hpc.chat.parse import ToolParser
from polar_hpc.engine.http1 import Http1Pool
from polar_hpc.log import get_logger
from polar_hpc.providers import provider_api
from polar_hpc.providers.reply import SSE_HEADERS
from polar_hpc.providers.writer import Writer
from polar_hpc.wire.calls import CompletionRecord, Provider, SamplingParams

if TYPE_CHECKING:
    from polar_hpc.chat.template import ChatTemplate
    from polar_hpc.engine.result import GenerateResult
    from polar_hpc.engine.stream import EngineStream
    from polar_hpc.providers.request import Normalized

log = get_logger("proxy.live")

WATCH_INTERVAL_S = 0.4
"""After at least this long without a write, a stream's connection is checked for a client that went away (and
again after each such interval). Longer than the engine stream's longest wait between hand-outs
(``proxy.stream_max_delay_s``), so that a stream writing at that pace is never checked."""
WATCH_TICK_S = 0.2
"""The checks run on multiples of this of the monotonic clock (so at most ``WATCH_INTERVAL_S`` + this after the
last write): the streams due are checked in one wake-up."""
ABORT_WAIT_S = 3.0
"""After a client went away, how long the aborted call may take to come back with its record."""


@runtime_checkable
class StreamingEngine(Protocol):
    async def open_stream(
        self,
        input_ids: list[int],
        sampling: SamplingParams,
        *,
        session_id: str | None = None,
        stop_token_ids: list[int] | None = None,
        deadline: float | None = None,
    ) -> EngineStream: ...


def stream_refusal(engine: object) -> str | None:
    """Why ``engine`` cannot stream while it samples (None: it can, or it is no streaming engine at all).
    The streamed call speaks plain HTTP/1.1 only (``engine.http1``): an ``https://`` engine cannot."""
    if not isinstance(engine, StreamingEngine):
        return None
    bad = [url for url in getattr(engine, "endpoints", []) if not Http1Pool.supports(url)]
    return f"engine URLs {bad} are not plain http:// (streamed generate speaks plain HTTP only)" if bad else None


class LiveSink:
    """Stands in for ``engine.generate`` in one call and writes the client's bytes as tokens arrive."""

    def __init__(self, engine: StreamingEngine, provider: Provider, norm: Normalized, template: ChatTemplate,
                 parser: ToolParser) -> None:
        self.engine = engine
        self.provider = provider
        self.api = provider_api(provider)
        self.norm = norm
        self.template = template
        self.parser = parser
        self.writer: Writer | None = None
        self.out: LiveResponse | None = None
        """Where the bytes go (set by :func:`answer_live`; without one they are kept in ``pending``)."""
        self.pending = bytearray()
        self.aborted = False
        self.sampled = 0
        self.opened = False
        """The engine accepted the streamed call (errors from here on are in-stream)."""
        self._stream: EngineStream | None = None
        self._detok: Detokenizer | None = None

    async def generate(
        self,
        ids: list[int],
        sampling: SamplingParams,
        record: CompletionRecord,
        *,
        session_id: str,
        stop_token_ids: list[int],
        deadline: float | None,
        in_think: bool,
    ) -> GenerateResult:
        self.writer = self.writer_for(record, len(ids))
        stream = await self.engine.open_stream(ids, sampling, session_id=session_id, stop_token_ids=stop_token_ids,
                                               deadline=deadline)
        self._stream = stream
        detok = self._detok = Detokenizer(self.template)  # made while the engine computes the first token
        shaper = Shaper(self.parser, in_think=in_think, stop=self.norm.canonical.sampling.stop)
        stop_ids = frozenset(stop_token_ids)
        if self.aborted:
            stream.abort()
        self.opened = True
        out = self.out
        if out is not None:
            out.open_soon()  # the client's response starts now, while the engine computes the first token
        try:
            async for new, _ in stream:
                self.sampled += len(new)
                piece = detok.feed([t for t in new if t not in stop_ids])  # the whole reply: see reply_text
                if self.aborted or stream.result is not None:
                    continue  # the last chunk's text is sent with the parsed reply
                r_delta, r_done, t_delta = shaper.feed(piece)
                w = self.writer
                data = (w.reasoning(r_delta) if r_delta else b"") + (w.reasoning_done(r_done) if r_done else b"")
                data += w.text(t_delta) if t_delta else b""
                if not data:
                    continue
                if out is None:
                    self.pending += data
                else:
                    await out.send(data)  # straight to the socket, in the step that read the token
        finally:
            await stream.close()
        assert stream.result is not None
        return stream.result

    def reply_text(self, n_text_ids: int) -> str | None:
        """The reply's text decoded as it streamed, where that is exactly ``template.decode`` of its first
        ``n_text_ids`` sampled ids (all but a final stop token); None: decode them."""
        detok = self._detok
        return detok.text if detok is not None and detok.fed == n_text_ids else None

    def writer_for(self, record: CompletionRecord, prompt_tokens: int) -> Writer:
        """The provider's event writer for this call (also for a call the engine did not stream: the oracle's)."""
        opts = self.norm.options
        return self.api.writer(record.completion_id, opts.model or self.norm.canonical.model,
                               int(record.timings.received), prompt_tokens, opts)

    def abort(self) -> None:
        """The client went away: stop the engine request (the call ends with what was sampled)."""
        if not self.aborted:
            self.aborted = True
            if self._stream is not None:
                self._stream.abort()


class _HeadWithBody(web.StreamResponse):
    """A stream response whose head goes out with its first body bytes: one segment, one wake-up of the client
    (aiohttp ≥ 3.12 reads this flag; older versions send the head at ``prepare``, which is only slower)."""

    _send_headers_immediately = False


class LiveResponse:
    """The client's side of one live stream. Bytes are written straight from the step that has them (the sink
    as tokens arrive, a keep-alive timer when the stream is silent), under a lock so that they keep their order
    even when a write waits for a slow client. The response is prepared with the first bytes, with the
    writer's opening events in front of them."""

    def __init__(self, request: web.BaseRequest, sink: LiveSink, keepalive_s: float,
                 on_gone: Callable[[], None]) -> None:
        self.request = request
        self.sink = sink
        self.keepalive_s = keepalive_s
        self.on_gone = on_gone
        self.resp: web.StreamResponse | None = None
        self.last_write = time.monotonic()
        self.gone = False
        """The client went away (a failed write, or the disconnect watch): nothing more is written."""
        self.closed = False
        """The handler is answering (or has answered): the timers write nothing more."""
        self._lock = asyncio.Lock()
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def send(self, data: bytes, *, keepalive: bool = False) -> None:
        """Write ``data`` (preparing the response first, with the opening events); ``keepalive``: write the
        provider's keep-alive instead (the opening events are the first one, where the provider has them).
        A client that is gone ends the call (``on_gone``)."""
        async with self._lock:
            if self.gone:
                return
            w = self.sink.writer
            try:
                if self.resp is None:
                    data = (w.start() if w is not None else b"") + data
                    if keepalive and not data:
                        data = w.keepalive() if w is not None else self.sink.api.bare_keepalive
                    self.resp = (_HeadWithBody if data else web.StreamResponse)(headers=SSE_HEADERS)
                    await self.resp.prepare(self.request)  # a head alone is sent at once (Google has no opening)
                elif keepalive:
                    data = w.keepalive() if w is not None else self.sink.api.bare_keepalive
                if data:
                    await self.resp.write(data)
            except (ConnectionError, RuntimeError):
                self.on_gone()
                return
            self.last_write = time.monotonic()
            self.arm()

    async def end(self, data: bytes) -> None:
        """The last bytes and the end of the stream (a client gone by now has all it will get)."""
        async with self._lock:
            if self.gone or self.resp is None:
                return
            try:
                await self.resp.write(data)
                await self.resp.write_eof()
            except (ConnectionError, RuntimeError):
                pass

    def open_soon(self) -> None:
        """Start the response unless bytes do first: a token already read goes out with the head (and no task
        is made for the opening)."""
        asyncio.get_running_loop().call_soon(self._open_if_unopened)

    def _open_if_unopened(self) -> None:
        if self.resp is None and not self.gone:
            self._spawn(self.send(b""))

    def arm(self) -> None:
        """(Re)start the silence timer: after ``keepalive_s`` without a write a keep-alive is sent, and after
        :data:`WATCH_INTERVAL_S` the connection is checked for a client that went away."""
        if self._timer is not None:
            self._timer.cancel()
        if self.closed:
            return
        now = self._loop.time()
        check = now + WATCH_INTERVAL_S
        check += -check % WATCH_TICK_S
        keepalive = now + self.last_write + self.keepalive_s - time.monotonic()
        self._timer = self._loop.call_at(min(check, keepalive), self._due)

    def _due(self) -> None:
        self._timer = None
        if self.closed or self.gone:
            return
        transport = self.request.transport
        if transport is None or transport.is_closing():
            self.on_gone()
        elif time.monotonic() - self.last_write >= self.keepalive_s:
            self._spawn(self._keepalive())
        else:
            self.arm()

    async def _keepalive(self) -> None:
        await self.send(b"", keepalive=True)  # which re-arms the timer

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        if self.closed:
            coro.close()
            return
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def close(self) -> None:
        """The handler answers now: the timers stop (bytes a timer's write handed to the transport are sent; only
        its wait for a slow client is cut short, and the lock is released for the handler's last write)."""
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
        for task in list(self._tasks):
            task.cancel()


Call = Callable[[LiveSink], Awaitable[tuple[Any, CompletionRecord]]]
"""``Generator.complete`` bound to one request, taking the sink."""


async def answer_live(
    request: web.BaseRequest,
    sink: LiveSink,
    call: Call,
    *,
    keepalive_s: float,
    finish: Callable[[CompletionRecord | None], None],
    fail: Callable[[BaseException], web.StreamResponse],
    stream_error: Callable[[BaseException, str], bytes],
) -> web.StreamResponse:
    """Answer one streaming request. The call runs in this task (the prompt is built and the engine request
    sent without a hop to another task) and its sink writes the client's bytes as they come.
    ``finish(record)`` hands the call's record (or None) to the session log exactly once; ``fail(err)`` answers
    an error before the stream started (and finishes the record); ``stream_error(err, model)`` is the
    provider's in-stream error event."""
    loop = asyncio.get_running_loop()
    bound: asyncio.Timeout | None = None

    def client_gone() -> None:
        if not out.gone:
            out.gone = True
            sink.abort()
            if bound is not None:  # the aborted call has ABORT_WAIT_S to come back with its record
                bound.reschedule(loop.time() + ABORT_WAIT_S)

    out = LiveResponse(request, sink, keepalive_s, client_gone)
    sink.out = out
    loop.call_soon(out.arm)  # once the step that builds the prompt and sends the engine request is done
    finished = False
    try:
        try:
            async with asyncio.timeout(None) as bound:
                reply, rec = await call(sink)
        except Exception as err:  # noqa: BLE001 - the call's own failure, answered in the provider's form
            finished = True
            out.close()
            if isinstance(err, TimeoutError) and bound is not None and bound.expired():
                finish(None)
                log.warning("an aborted call did not end within %.0fs; it leaves no record", ABORT_WAIT_S)
                return out.resp or web.Response(status=499)
            if out.gone:
                from polar_hpc.providers.errors import Failed

                finish(err.record if isinstance(err, Failed) else None)
                return out.resp or web.Response(status=499)
            if out.resp is None:
                return fail(err)
            fail(err)
            await out.end(stream_error(err, sink.norm.options.model))
            return out.resp
        finished = True
        out.close()
        rec.timings.responded = time.time()
        if out.gone:  # the client left: the aborted call's record says ``abort``
            finish(rec)
            log.info("client of call %d of session %s went away after %d sampled tokens; engine request aborted",
                     rec.index, rec.session_id, len(rec.output_ids))
            return out.resp or web.Response(status=499)
        assert sink.writer is not None  # oracle sessions never take the live path (proxy.server)
        tail = sink.writer.finish(reply)
        if sink.writer.mismatch:
            log.info("call %d of session %s: %s", rec.index, rec.session_id, sink.writer.mismatch)
        finish(rec)
        if out.resp is None:
            return web.Response(body=sink.writer.start() + tail, headers=SSE_HEADERS)
        await out.end(tail)
        return out.resp
    finally:
        out.close()
        if not finished:
            finish(None)
            log.info("a streaming call ended before its answer (the handler was cancelled)")
