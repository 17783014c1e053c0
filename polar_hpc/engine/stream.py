"""A streamed ``POST /generate`` (``stream: true``): sampled ids and logprobs as they come, then the result.

SGLang sends SSE frames ``data: <GenerateResponse>`` and ``data: [DONE]``. In 0.5.23 a chunk is cumulative by
default (all ids and logprobs so far) and a delta with ``--incremental-streaming-output``; both are read here: a
chunk whose ``output_token_logprobs`` holds ``completion_tokens`` entries is cumulative, one that holds exactly the
entries not yet seen is a delta. The final chunk carries the finish reason; the
:class:`~polar_hpc.engine.result.GenerateResult` built from the stream equals the non-streaming one.

The engine's retry loop opens the stream (``SGLangEngine.open_stream``): connection errors and 5xx before the
response head are retried on another server as ``generate`` does; once sampling has started, a failure ends the
stream with :class:`EngineError` (no token is sampled twice). :meth:`EngineStream.abort` asks the server to stop
(``/abort_request``) and keeps reading until it answers with its abort chunk (bounded), so the result holds every
token sampled before the stop.
"""

from __future__ import annotations

import asyncio
import time
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING

import aiohttp
import msgspec
import numpy as np

from polar_hpc.engine.errors import EngineError, EngineTimeout
from polar_hpc.engine.http1 import Http1Stream
from polar_hpc.engine.protocol import (
    ErrorResponse,
    FinishAbort,
    FinishReason,
    LogprobEntry,
    StreamChunk,
    StreamMeta,
    finish_fields,
)
from polar_hpc.engine.result import GenerateResult, top_arrays
from polar_hpc.log import get_logger

if TYPE_CHECKING:
    from polar_hpc.engine.admin import EngineAdmin
    from polar_hpc.engine.routing import ServerState

log = get_logger("engine.stream")


ABORT_GRACE_S = 1.0
"""After ``abort()``, how long the server has to send its abort chunk before the connection is closed."""

FIRST_DELAY_S = 0.02
"""After tokens were handed to the consumer, the connection is not read for a while, so that what is sampled
meanwhile is read as one: each read costs a wake-up, a read and a step of the consumer, which at a server's
pace of one chunk per token is most of a streamed call's CPU. The first token is handed out at once; the wait
after it is this, and it doubles after each hand-out up to the engine's ``stream_max_delay_s``."""
TICK_S = FIRST_DELAY_S
"""Those waits end on a multiple of this on the monotonic clock, so that the streams of one proxy wake together
(one wake-up reads all of them) instead of each at its own time."""

_DECODE = msgspec.json.Decoder(StreamChunk)
_DECODE_BATCH = msgspec.json.Decoder(list[StreamChunk])
_NEXT_FRAME = b"\n\ndata: "
_DECODE_ERROR = msgspec.json.Decoder(ErrorResponse)
_LOGPROB, _TOKEN = itemgetter(0), itemgetter(1)
_CUMULATIVE_SEEN: set[str] = set()
"""Servers already warned about for streaming cumulative chunks (once per process)."""


class EngineStream:
    """One streamed generate call. ``async for ids, logprobs in stream`` yields the new tokens (lists);
    :attr:`result` is set once the stream has ended. :meth:`close` always (aborts a stream not finished)."""

    def __init__(self, engine: EngineAdmin, server: ServerState, rid: str, body: Http1Stream, deadline: float,
                 attempts: int) -> None:
        self._engine = engine
        self._max_delay = engine.settings.stream_max_delay_s
        self._server = server
        self.url = server.url
        self.rid = rid
        self._body = body
        self._deadline = deadline
        self._attempts = attempts
        self._buf = bytearray()
        self._ids: list[int] = []
        self._lps: list[float] = []
        self._top: list[list[LogprobEntry] | None] = []
        """``output_top_logprobs`` rows, aligned with ``_ids`` (when the engine asked for them)."""
        self._text: list[str] = []
        self._cumulative = True
        self._handed = 0.0
        """When tokens were last handed to the consumer."""
        self._delay = 0.0
        """How long after that the connection is read again."""
        self._abort_at: float | None = None
        self._closed = False
        self.result: GenerateResult | None = None
        self.first_token_at: float | None = None
        """``time.monotonic()`` when the first sampled token arrived."""

    @property
    def tokens(self) -> int:
        return len(self._ids)

    def __aiter__(self) -> EngineStream:
        return self

    async def __anext__(self) -> tuple[list[int], list[float]]:
        """The tokens of every chunk received so far (waits for one): a consumer that falls behind gets
        them in one piece instead of paying per chunk."""
        start = len(self._ids)
        while self.result is None and len(self._ids) == start:
            if self._take_frames():
                continue
            due = self._handed + self._delay
            wait = due - time.monotonic()
            if wait > 0 and self._abort_at is None:
                await self._body.pause(wait + -due % TICK_S)  # the chunks sampled meanwhile are read as one
                continue
            await self._read_more()
        if len(self._ids) > start:
            self._handed = time.monotonic()
            self._delay = min(self._max_delay, 2 * self._delay or FIRST_DELAY_S)
            return self._ids[start:], self._lps[start:]
        raise StopAsyncIteration

    async def _read_more(self) -> None:
        limit = self._deadline if self._abort_at is None else min(self._deadline, self._abort_at + ABORT_GRACE_S)
        try:
            if limit <= time.monotonic():
                raise TimeoutError
            self._body.set_deadline(limit)
            data = await self._body.read()
        except TimeoutError:
            if self._abort_at is not None:
                self._finish_local("the server did not confirm the abort in time; connection closed")
                return
            self._abort_at = time.monotonic()  # asked once (``close`` does not ask again)
            self._send_abort()
            raise EngineTimeout(
                f"streamed generate at {self.url} (rid {self.rid}) passed its deadline after {self.tokens} tokens; "
                "request aborted"
            ) from None
        except aiohttp.ClientError as err:
            if self._abort_at is not None:
                self._finish_local(f"connection ended after the abort: {err}")
                return
            raise EngineError(
                f"streamed generate at {self.url} (rid {self.rid}) broke after {self.tokens} tokens: "
                f"{type(err).__name__}: {err}"
            ) from None
        if not data:
            if self._abort_at is not None:
                self._finish_local("the stream ended after the abort without a final chunk")
                return
            raise EngineError(f"streamed generate at {self.url} (rid {self.rid}) ended without a finish reason")
        self._buf += data

    def _take_frames(self) -> bool:
        """Read every complete frame in the buffer (False: none is complete yet)."""
        end = self._buf.rfind(b"\n\n")
        if end < 0:
            return False
        region = bytes(self._buf[:end])
        del self._buf[: end + 2]
        ids, lps = self._ids, self._lps
        start = len(ids)
        final: StreamMeta | None = None
        deltas: list[list[LogprobEntry]] = []
        """Consecutive delta chunks' entries (the common case), taken into ``ids`` and ``lps`` in one step."""
        seen = start
        for chunk in self._decode(region):
            meta = chunk.meta_info
            entries = meta.output_token_logprobs
            if not self._cumulative and entries is not None and seen + len(entries) == meta.completion_tokens:
                deltas.append(entries)
                seen += len(entries)
                if meta.output_top_logprobs is not None:
                    self._top += meta.output_top_logprobs
                self._text.append(chunk.text)
            else:
                self._take(deltas)
                self._chunk(chunk)
                seen = len(ids)
            if meta.finish_reason is not None:
                final = meta
                break
        self._take(deltas)
        if len(ids) > start:
            if None in lps[start:]:
                missing = lps.index(None, start)  # type: ignore[arg-type]  # the None a chunk carried
                raise EngineError(
                    f"{self.url} (rid {self.rid}): streamed token {missing} (id {ids[missing]}) has no logprob"
                )
            if self.first_token_at is None:
                self.first_token_at = time.monotonic()
        if final is not None and final.finish_reason is not None:
            self._finish(final, final.finish_reason)
        return True

    def _take(self, deltas: list[list[LogprobEntry]]) -> None:
        """Append the entries of ``deltas`` (then emptied) to the ids and logprobs."""
        flat = list(chain.from_iterable(deltas))
        deltas.clear()
        self._lps += map(_LOGPROB, flat)  # a None is caught by the caller, with its position
        self._ids += map(_TOKEN, flat)

    def _decode(self, region: bytes) -> list[StreamChunk]:
        """The chunks of ``data:`` frames separated by blank lines. SGLang's frames are one ``data:`` line each:
        those are decoded as one JSON array; anything else frame by frame."""
        if region.startswith(b"data: "):
            joined = region[6:].replace(_NEXT_FRAME, b",")
            if joined.endswith(b",[DONE]"):
                joined = joined[:-7]
            elif joined == b"[DONE]":
                return []
            if b"\n" not in joined:
                try:
                    return _DECODE_BATCH.decode(b"[" + joined + b"]")
                except (msgspec.DecodeError, msgspec.ValidationError):
                    pass  # found frame by frame, with its error
        return [c for c in map(self._decode_frame, region.split(b"\n\n")) if c is not None]

    def _decode_frame(self, frame: bytes) -> StreamChunk | None:
        payload = b"".join(line[5:].lstrip() for line in frame.split(b"\n") if line.startswith(b"data:"))
        if not payload or payload == b"[DONE]":
            return None
        try:
            return _DECODE.decode(payload)
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise self._chunk_error(payload) from None

    def _chunk(self, chunk: StreamChunk) -> None:
        """A chunk that is not a plain delta: the first, a cumulative one, or a broken one (raises)."""
        meta = chunk.meta_info
        entries = meta.output_token_logprobs
        if entries is None:
            raise EngineError(f"{self.url} (rid {self.rid}) streamed a chunk without meta_info.output_token_logprobs")
        seen = len(self._ids)
        if self._cumulative and len(entries) == meta.completion_tokens and len(entries) >= seen:
            new = entries[seen:]
            if chunk.text:
                self._text = [chunk.text]
            if seen and self.url not in _CUMULATIVE_SEEN:
                _CUMULATIVE_SEEN.add(self.url)
                log.warning("%s streams cumulative chunks (each repeats every token so far: quadratic in the reply's "
                            "length); start SGLang with --incremental-streaming-output", self.url)
        elif seen + len(entries) == meta.completion_tokens:
            self._cumulative = seen == 0 and self._cumulative
            new = entries
            self._text.append(chunk.text)
        else:
            raise EngineError(
                f"{self.url} (rid {self.rid}): a streamed chunk holds {len(entries)} logprob entries for "
                f"completion_tokens={meta.completion_tokens} after {seen} tokens (neither cumulative nor a delta)"
            )
        self._ids += [e[1] for e in new]
        self._lps += [e[0] for e in new]  # type: ignore[misc]  # Nones are checked where the ids are taken
        if meta.output_top_logprobs is not None:
            top = meta.output_top_logprobs
            self._top = self._top[:seen] + list(top[len(top) - len(new):])

    def _chunk_error(self, payload: bytes) -> EngineError:
        try:
            err = _DECODE_ERROR.decode(payload).error
            message = err if isinstance(err, str) else err.message
        except (msgspec.DecodeError, msgspec.ValidationError):
            message = f"an undecodable chunk: {payload[:300].decode(errors='replace')}"
        return EngineError(f"{self.url} (rid {self.rid}) failed mid-stream after {self.tokens} tokens: {message}")

    def _finish(self, meta: StreamMeta | None, fr: FinishReason) -> None:
        reason, matched, abort_message = finish_fields(fr)
        top_ids, top_lps = top_arrays(self._top, len(self._ids), self._engine.settings.top_logprobs)
        self.result = GenerateResult(
            output_ids=np.asarray(self._ids, dtype=np.int32),
            output_logprobs=np.asarray(self._lps, dtype=np.float32),
            output_top_ids=top_ids,
            output_top_logprobs=top_lps,
            finish_reason=reason,
            matched_stop=matched,
            prompt_tokens=meta.prompt_tokens if meta else 0,
            completion_tokens=len(self._ids),
            cached_tokens=meta.cached_tokens if meta else 0,
            weight_version=meta.weight_version if meta else None,
            server=self.url,
            rid=self.rid,
            text="".join(self._text),
            abort_message=abort_message,
            attempts=self._attempts,
        )
        self._engine.pool.mark_ok(self._server)

    def _finish_local(self, why: str) -> None:
        """The server stopped answering after an abort: the result is what was sampled until then."""
        log.info("stream %s at %s: %s", self.rid, self.url, why)
        self._finish(None, FinishAbort(message=f"aborted by the client ({why})"))
        self._body.close()

    def abort(self) -> None:
        """Ask the server to stop this request; iteration then ends with its abort chunk (or after
        :data:`ABORT_GRACE_S` without one) and :attr:`result` says ``abort``."""
        if self.result is None and self._abort_at is None:
            self._abort_at = time.monotonic()
            self._send_abort()

    def _send_abort(self) -> None:
        self._engine.abort_in_background(self.url, self.rid)

    async def close(self) -> None:
        """Release the connection; a stream that has not finished is aborted on the server first."""
        if self._closed:
            return
        self._closed = True
        if self.result is None and self._abort_at is None:
            self._send_abort()
        self._body.close()
        self._server.inflight -= 1

    async def drain(self) -> GenerateResult:
        """Read to the end (discarding deltas) and return the result."""
        async for _ in self:
            pass
        assert self.result is not None
        return self.result


async def read_all(resp: Http1Stream, deadline: float) -> bytes:
    """The body of a refused streamed call (what arrives before ``deadline``)."""
    out = bytearray()
    try:
        async with asyncio.timeout(max(0.01, deadline - time.monotonic())):
            while chunk := await resp.read():
                out += chunk
    except (TimeoutError, aiohttp.ClientError):
        pass
    return bytes(out)
