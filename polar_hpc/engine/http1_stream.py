"""A connection of the HTTP/1.1 client (``engine.http1``) and a response read over it as it arrives (SSE from a
streaming ``/generate``): ``Http1Pool.stream`` returns one once its head is in."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from itertools import repeat

import aiohttp

from polar_hpc.engine.http1_wire import parse_head, parse_response


class Http1Conn(asyncio.Protocol):
    """One keep-alive connection: a whole response for ``Http1Pool.post``, or fed to the :class:`Http1Stream` reading
    it."""


    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes, bool]] | None = None
        self.closed = False
        self.received = False
        self.stream: Http1Stream | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # a TCP connection's transport is a Transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.stream is not None:
            self.stream._lost(exc)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(
                aiohttp.ServerDisconnectedError(f"connection closed before a complete response ({exc or 'EOF'})")
            )

    def data_received(self, data: bytes) -> None:
        self.received = True
        self.buf += data
        if self.stream is not None:
            self.stream._feed(self.buf)
            return
        if self.waiter is None or self.waiter.done():
            return
        try:
            done = parse_response(self.buf)
        except ValueError as err:
            self.waiter.set_exception(aiohttp.ClientPayloadError(f"malformed HTTP response: {err}"))
            self.close()
            return
        if done is not None:
            self.waiter.set_result(done)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class Http1Stream:
    """One response read as it arrives: :attr:`status` once the head is in, then :meth:`read` until ``b""``.

    A server that closes an idle kept-alive connection before answering is not retried here (the caller's
    retry loop sees ``aiohttp.ServerDisconnectedError`` before any byte, as for a refused connection)."""

    def __init__(self, release: Callable[[bool], None], conn: Http1Conn, data: bytes) -> None:
        """``release(reuse)`` gives the connection back to its pool (``reuse``: it may carry another request)."""
        self._release = release
        self._conn = conn
        self.status = 0
        self.keep_alive = False
        self._head_done = False
        self._chunked = False
        self._left: int | None = None
        """Body bytes still due: of the current chunk (chunked) or of the body (Content-Length)."""
        self._state = "size"
        """Chunked decoding: ``size`` line, chunk ``data``, its ``crlf``, ``trailer`` lines after the last."""
        self._body = bytearray()
        self._eof = False
        self._error: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._deadline: float | None = None
        self._deadline_timer: asyncio.TimerHandle | None = None
        self._expired = False
        self._released = False
        conn.stream = self
        conn.received = False
        assert conn.transport is not None
        conn.transport.write(data)

    @property
    def complete(self) -> bool:
        return self._eof and self._error is None

    async def wait_head(self) -> None:
        while not self._head_done:
            await self._wait()

    def set_deadline(self, deadline: float) -> None:
        """From ``deadline`` (``time.monotonic()``) on, a :meth:`read` that has to wait raises ``TimeoutError``
        (one timer for the stream, not one per read)."""
        if deadline == self._deadline:
            return
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        self._deadline, self._expired = deadline, False
        self._deadline_timer = asyncio.get_running_loop().call_later(deadline - time.monotonic(), self._expire)

    def _expire(self) -> None:
        self._expired = True
        self._wake()

    async def read(self) -> bytes:
        """The body bytes received since the last read (waits for some); ``b""`` once the body is complete.
        Raises ``TimeoutError`` once the :meth:`set_deadline` has passed."""
        while not self._body:
            if self._eof:
                return b""
            await self._wait()
        out = bytes(self._body)
        self._body.clear()
        return out

    async def pause(self, seconds: float) -> None:
        """Do not read from the connection for ``seconds`` (what arrives meanwhile waits in the kernel)."""
        transport = self._conn.transport
        assert transport is not None
        transport.pause_reading()
        try:
            await asyncio.sleep(seconds)
        finally:
            transport.resume_reading()

    async def _wait(self) -> None:
        if self._error is not None:
            raise self._error
        if self._expired:
            raise TimeoutError
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        if self._error is not None:
            raise self._error
        if self._expired:
            raise TimeoutError

    def close(self) -> None:
        """Give the connection back (kept alive only after a complete body) or close it."""
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        if not self._released:
            self._released = True
            self._release(self.complete and self.keep_alive)

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _lost(self, exc: Exception | None) -> None:
        if not self._eof:
            if self._left is None and self._head_done and not self._chunked:
                self._eof = True  # a body delimited by the connection's end
            else:
                self._error = aiohttp.ServerDisconnectedError(
                    f"connection closed before the end of the response ({exc or 'EOF'})"
                )
        self._wake()

    def _feed(self, buf: bytearray) -> None:
        try:
            self._parse(buf)
        except ValueError as err:
            self._error = aiohttp.ClientPayloadError(f"malformed HTTP response: {err}")
            self._conn.close()
        self._wake()

    def _whole_chunks(self, buf: bytearray) -> None:
        """The complete chunks at the start of ``buf`` moved to the body at C speed (a stream of small chunks,
        as SSE sends): split at CRLF, every size line must give its data's length. Nothing is consumed when
        that does not hold, as when chunk data holds a CRLF (SSE and JSON frames do not); the last chunk and
        anything incomplete are left to the chunk-by-chunk parser."""
        parts = bytes(buf).split(b"\r\n")
        del parts[-1]  # not followed by CRLF yet
        if len(parts) % 2:
            del parts[-1]  # a size line whose data is still to come
        sizes, datas = parts[0::2], parts[1::2]
        if b"" in datas:  # the last chunk (size 0): it and its trailers are read chunk by chunk
            del datas[datas.index(b"") :]
            del sizes[len(datas) :]
            del parts[2 * len(datas) :]
        if len(datas) < 2:
            return
        try:
            if list(map(int, sizes, repeat(16))) != list(map(len, datas)):
                return
        except ValueError:
            return  # chunk extensions
        self._body += b"".join(datas)
        del buf[: sum(map(len, parts)) + 2 * len(parts)]

    def _parse(self, buf: bytearray) -> None:
        if not self._head_done:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > 65536:
                    raise ValueError("response headers over 64 KiB")
                return
            self.status, self._left, self._chunked, self.keep_alive = parse_head(bytes(buf[:end]))
            del buf[: end + 4]
            self._head_done = True
            if not self._chunked and self._left is None and (self.status in (204, 304) or self.status < 200):
                self._left = 0
            if self._left == 0 and not self._chunked:
                self._eof = True
                return
        if not self._chunked:
            take = len(buf) if self._left is None else min(self._left, len(buf))
            self._body += buf[:take]
            del buf[:take]
            if self._left is not None:
                self._left -= take
                self._eof = self._left == 0
            return
        if self._state == "size":
            self._whole_chunks(buf)
        pos, n = 0, len(buf)  # parse by position and cut ``buf`` once: deleting from its front is a copy
        body = self._body
        try:
            while pos < n and not self._eof:
                if self._state == "size":  # fast path: a whole chunk and its CRLF are in
                    eol = buf.find(b"\r\n", pos)
                    if eol < 0:
                        return
                    try:
                        size = int(buf[pos:eol], 16)
                    except ValueError:
                        size = int(bytes(buf[pos:eol]).split(b";", 1)[0], 16)
                    end = eol + 2 + size
                    if size and end + 2 <= n:
                        if buf[end : end + 2] != b"\r\n":
                            raise ValueError(f"chunk not followed by CRLF: {bytes(buf[end:end + 40])!r}")
                        body += buf[eol + 2 : end]
                        pos = end + 2
                        continue
                    pos = eol + 2
                    self._left = size
                    self._state = "data" if size else "trailer"
                    continue
                if self._state == "data":
                    take = min(self._left or 0, n - pos)
                    body += buf[pos : pos + take]
                    pos += take
                    self._left = (self._left or 0) - take
                    if self._left == 0:
                        self._state = "crlf"
                    continue
                eol = buf.find(b"\r\n", pos)
                if eol < 0:
                    return
                line = bytes(buf[pos:eol])
                pos = eol + 2
                if self._state == "crlf":
                    if line:
                        raise ValueError(f"chunk not followed by CRLF: {line[:40]!r}")
                    self._state = "size"
                elif not line:  # the blank line that ends the trailers
                    self._eof = True
        finally:
            del buf[:pos]
