"""A streaming request answered while the engine samples (``proxy.stream_upstream``).

The call runs through :meth:`Generator.complete` exactly as a non-streaming one, with a :class:`LiveSink`
in place of the engine's ``generate``: the sink opens a streamed ``/generate``, shapes each delta into the
provider's events for the client, and returns the engine's result, so the record is built by the same code
from the same ids and logprobs. The HTTP side (:func:`answer_live`) writes what the sink has queued, sends
the provider's keep-alive whenever the stream has been silent for the keep-alive interval (queueing, long
prefill, hidden reasoning, a tool call held until it parses), and on a client that goes away aborts the
engine request: the call then ends with the tokens sampled so far and is recorded with ``finish_reason``
``abort``.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from aiohttp import web

from polar_hpc.inference.http1 import Http1Pool
from polar_hpc.log import get_logger
from polar_hpc.proxy.live.text import Detokenizer, Shaper
from polar_hpc.proxy.live.writers import Writer, make_writer
from polar_hpc.proxy.parse import ToolParser
from polar_hpc.proxy.respond.common import SSE_HEADERS, bare_keepalive
from polar_hpc.wire.records import CompletionRecord, Provider, SamplingParams

if TYPE_CHECKING:
    from polar_hpc.inference.result import GenerateResult
    from polar_hpc.inference.stream import EngineStream
    from polar_hpc.inference.template import ChatTemplate
    from polar_hpc.proxy.normalize.common import Normalized

log = get_logger("proxy.live")

WATCH_INTERVAL_S = 0.25
"""How often open streams are checked for a client that went away (one task for all of them)."""
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
    The streamed call speaks plain HTTP/1.1 only (``inference.http1``): an ``https://`` engine cannot."""
    if not isinstance(engine, StreamingEngine):
        return None
    bad = [url for url in getattr(engine, "endpoints", []) if not Http1Pool.supports(url)]
    return f"engine URLs {bad} are not plain http:// (streamed generate speaks plain HTTP only)" if bad else None


class LiveSink:
    """Stands in for ``engine.generate`` in one call and queues the client's bytes as tokens arrive."""

    def __init__(self, engine: StreamingEngine, provider: Provider, norm: Normalized, template: ChatTemplate,
                 parser: ToolParser) -> None:
        self.engine = engine
        self.provider = provider
        self.norm = norm
        self.template = template
        self.parser = parser
        self.writer: Writer | None = None
        self.pending = bytearray()
        self.aborted = False
        self.sampled = 0
        self.opened = False
        """The engine accepted the streamed call (errors from here on are in-stream)."""
        self._stream: EngineStream | None = None
        self._detok: Detokenizer | None = None
        self._wake: Callable[[], None] = lambda: None

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
        self.writer = self.writer_for(record)
        detok = self._detok = Detokenizer(self.template)
        shaper = Shaper(self.parser, in_think=in_think, stop=self.norm.canonical.sampling.stop)
        stop_ids = frozenset(stop_token_ids)
        stream = await self.engine.open_stream(ids, sampling, session_id=session_id, stop_token_ids=stop_token_ids,
                                          deadline=deadline)
        self._stream = stream
        if self.aborted:
            stream.abort()
        self.opened = True
        self._wake()  # the client's response starts now, while the engine computes the first token
        try:
            async for new, _ in stream:
                self.sampled += len(new)
                piece = detok.feed([t for t in new if t not in stop_ids])  # the whole reply: see reply_text
                if self.aborted or stream.result is not None:
                    continue  # the last chunk's text is sent with the parsed reply
                r_delta, r_done, t_delta = shaper.feed(piece)
                w = self.writer
                out = (w.reasoning(r_delta) if r_delta else b"") + (w.reasoning_done(r_done) if r_done else b"")
                out += w.text(t_delta) if t_delta else b""
                if out:
                    self.pending += out
                    self._wake()
        finally:
            await stream.close()
        assert stream.result is not None
        return stream.result

    def reply_text(self, n_text_ids: int) -> str | None:
        """The reply's text decoded as it streamed, where that is exactly ``template.decode`` of its first
        ``n_text_ids`` sampled ids (all but a final stop token); None: decode them."""
        detok = self._detok
        return detok.text if detok is not None and detok.fed == n_text_ids else None

    def writer_for(self, record: CompletionRecord) -> Writer:
        """The provider's event writer for this call (also for a call the engine did not stream: the oracle's)."""
        opts = self.norm.options
        return make_writer(self.provider, record.completion_id, opts.model or self.norm.canonical.model,
                           int(record.timings.received), len(record.prompt_ids), opts)

    def abort(self) -> None:
        """The client went away: stop the engine request (the call ends with what was sampled)."""
        if not self.aborted:
            self.aborted = True
            if self._stream is not None:
                self._stream.abort()


class DisconnectWatch:
    """One task for all open streams: a stream whose client connection has closed is told so."""

    def __init__(self) -> None:
        self._streams: dict[int, tuple[web.Request, Callable[[], None]]] = {}
        self._task: asyncio.Task[None] | None = None

    def add(self, request: web.Request, on_gone: Callable[[], None]) -> int:
        key = id(request)
        self._streams[key] = (request, on_gone)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return key

    def remove(self, key: int) -> None:
        self._streams.pop(key, None)

    async def _run(self) -> None:
        while self._streams:
            await asyncio.sleep(WATCH_INTERVAL_S)
            for key, (request, on_gone) in list(self._streams.items()):
                transport = request.transport
                if transport is None or transport.is_closing():
                    self._streams.pop(key, None)
                    on_gone()

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


Call = Callable[[LiveSink], Awaitable[tuple[Any, CompletionRecord]]]
"""``Generator.complete`` bound to one request, taking the sink."""


async def answer_live(
    request: web.Request,
    sink: LiveSink,
    call: Call,
    *,
    keepalive_s: float,
    watch: DisconnectWatch,
    finish: Callable[[CompletionRecord | None], None],
    fail: Callable[[BaseException], web.StreamResponse],
    stream_error: Callable[[BaseException, str], bytes],
) -> web.StreamResponse:
    """Answer one streaming request. ``finish(record)`` hands the call's record (or None) to the session log
    exactly once; ``fail(err)`` answers an error before the stream started (and finishes the record);
    ``stream_error(err, model)`` is the provider's in-stream error event."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(call(sink))
    waiter: asyncio.Future[None] | None = None
    gone = False

    def wake() -> None:
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def client_gone() -> None:
        nonlocal gone
        gone = True
        sink.abort()
        wake()

    sink._wake = wake
    task.add_done_callback(lambda _: wake())
    key = watch.add(request, client_gone)
    resp: web.StreamResponse | None = None
    last_write = time.monotonic()
    finished = False
    try:
        while not task.done() and not gone:
            if not sink.pending and (resp is not None or not sink.opened):
                waiter = loop.create_future()
                timer = loop.call_later(max(0.0, last_write + keepalive_s - time.monotonic()), wake)
                try:
                    await waiter
                finally:
                    timer.cancel()
                    waiter = None
            if task.done() or gone:
                break
            data = bytes(sink.pending)
            sink.pending.clear()
            opening = resp is None and sink.opened
            if not data and not opening and time.monotonic() - last_write < keepalive_s:
                continue
            assert sink.writer is not None or not data
            try:
                if resp is None:
                    resp = web.StreamResponse(headers=SSE_HEADERS)
                    await resp.prepare(request)  # sends the head
                    data = (sink.writer.start() if sink.writer else b"") + data
                    if not data and opening:  # Google's stream has no opening event
                        last_write = time.monotonic()
                        continue
                if not data and sink.writer is not None:
                    data = sink.writer.keepalive()
                elif not data:
                    data = bare_keepalive(sink.provider)  # no writer yet: the prompt is being built
                await resp.write(data)
            except (ConnectionError, RuntimeError):
                client_gone()
                break
            last_write = time.monotonic()
        if gone:
            return await _after_gone(task, finish, resp)
        err = task.exception()
        if err is not None:
            finished = True
            if resp is None:
                return fail(err)
            fail(err)
            await _write_quietly(resp, stream_error(err, sink.norm.options.model))
            return resp
        reply, rec = task.result()
        assert sink.writer is not None  # oracle sessions never take the live path (proxy.server)
        tail = bytes(sink.pending) + sink.writer.finish(reply)
        if sink.writer.mismatch:
            log.info("call %d of session %s: %s", rec.index, rec.session_id, sink.writer.mismatch)
        rec.timings.responded = time.time()
        finished = True
        finish(rec)
        if resp is None:
            return web.Response(body=sink.writer.start() + tail, headers=SSE_HEADERS)
        await _write_quietly(resp, tail)
        return resp
    finally:
        watch.remove(key)
        if not finished and not gone:
            task.cancel()
            finish(None)
            log.info("a streaming call ended before its answer (the handler was cancelled)")


async def _after_gone(
    task: asyncio.Future[tuple[Any, CompletionRecord]],
    finish: Callable[[CompletionRecord | None], None],
    resp: web.StreamResponse | None,
) -> web.StreamResponse:
    """The client left: wait (bounded) for the aborted call and keep its record, which says ``abort``."""
    try:
        await asyncio.wait_for(asyncio.shield(task), ABORT_WAIT_S)
    except TimeoutError:
        task.cancel()
        finish(None)
        log.warning("an aborted call did not end within %.0fs; it leaves no record", ABORT_WAIT_S)
        return resp or web.Response(status=499)
    except BaseException as err:  # noqa: BLE001 - the call's own failure: its record, if any
        from polar_hpc.proxy.errors import Failed

        finish(err.record if isinstance(err, Failed) else None)
        return resp or web.Response(status=499)
    _, rec = task.result()
    rec.timings.responded = time.time()
    finish(rec)
    log.info("client of call %d of session %s went away after %d sampled tokens; engine request aborted",
             rec.index, rec.session_id, len(rec.output_ids))
    return resp or web.Response(status=499)


async def _write_quietly(resp: web.StreamResponse, data: bytes) -> None:
    try:
        await resp.write(data)
        await resp.write_eof()
    except (ConnectionError, RuntimeError):
        pass


def new_error_id() -> str:
    return secrets.token_hex(8)
