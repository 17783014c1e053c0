"""A minimal keep-alive HTTP/1.1 POST client for the hot ``/generate`` call (plain ``http://`` only).

aiohttp's client costs ≈0.3 CPU-ms per request; this one writes one buffer and parses one response
(``Content-Length`` or chunked) in a protocol, ≈0.07 ms. Failures raise aiohttp's exception types so callers
handle both clients alike: refused/reset/closed connections ``aiohttp.ClientConnectionError``, connect
timeouts ``aiohttp.ConnectionTimeoutError``, a malformed response ``aiohttp.ClientPayloadError``. A
connection is reused only after a complete response; a cancelled or timed-out request closes its connection.
:meth:`Http1Pool.stream` hands out a response's body as it arrives (SSE from a streaming ``/generate``).
"""

from __future__ import annotations

import asyncio
import time
from functools import lru_cache
from itertools import repeat
from urllib.parse import urlsplit

import aiohttp

__all__ = ["Http1Pool", "Http1Stream"]


class _Conn(asyncio.Protocol):
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
            done = _parse(self.buf)
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


def _parse(buf: bytearray) -> tuple[int, bytes, bool] | None:
    """``(status, body, keep_alive)`` once ``buf`` holds a whole response (consumed from it), else None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > 65536:
            raise ValueError("response headers over 64 KiB")
        return None
    status, length, chunked, keep_alive = _head(bytes(buf[:end]))
    start = end + 4
    if chunked:
        body = bytearray()
        pos = start
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size = int(bytes(buf[pos:eol]).split(b";", 1)[0], 16)
            if size == 0:
                trailer_end = buf.find(b"\r\n\r\n", eol)
                if trailer_end < 0:
                    return None
                del buf[: trailer_end + 4]
                return status, bytes(body), keep_alive
            if len(buf) < eol + 2 + size + 2:
                return None
            body += buf[eol + 2 : eol + 2 + size]
            pos = eol + 2 + size + 2
    if length is None:
        if status in (204, 304) or 100 <= status < 200:
            length = 0
        else:
            raise ValueError("response without Content-Length or chunked encoding")
    if len(buf) < start + length:
        return None
    body_bytes = bytes(buf[start : start + length])
    del buf[: start + length]
    return status, body_bytes, keep_alive


def _head(raw: bytes) -> tuple[int, int | None, bool, bool]:
    """``(status, content_length, chunked, keep_alive)`` of a response head (without its blank line)."""
    lines = raw.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ValueError(f"bad status line {lines[0][:80]!r}")
    status = int(parts[1])
    length: int | None = None
    chunked = False
    keep_alive = parts[0] == b"HTTP/1.1"
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        value = value.strip()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"connection":
            if value.lower() == b"close":
                keep_alive = False
            elif value.lower() == b"keep-alive":
                keep_alive = True
    return status, length, chunked, keep_alive


class Http1Pool:
    """Idle keep-alive connections per ``host:port``; one request per connection at a time."""

    def __init__(self, limit: int = 0) -> None:
        """``limit``: most requests in flight at once over all hosts (more wait for a slot); 0 = no limit."""
        self._idle: dict[tuple[str, int], list[_Conn]] = {}
        self._slots = asyncio.Semaphore(limit) if limit > 0 else None

    @staticmethod
    @lru_cache(maxsize=256)
    def supports(url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme == "http" and parts.hostname is not None

    async def post(
        self, url: str, body: bytes, headers: dict[str, str], timeout_s: float, connect_timeout_s: float
    ) -> tuple[int, bytes]:
        """``(status, body)`` of ``POST url``; raises ``TimeoutError`` once ``timeout_s`` has passed."""
        key, data = _request(url, body, headers)
        host, port = key
        async with asyncio.timeout(timeout_s):
            if self._slots is None:
                return await self._request(key, host, port, data, connect_timeout_s)
            async with self._slots:
                return await self._request(key, host, port, data, connect_timeout_s)

    async def stream(
        self, url: str, body: bytes, headers: dict[str, str], timeout_s: float, connect_timeout_s: float
    ) -> Http1Stream:
        """``POST url`` and return once the response head is in; the body is read from the stream as it
        arrives. ``timeout_s`` bounds the wait for the head (the caller bounds the reads). The caller must
        :meth:`Http1Stream.close` it (the connection is reused only after a complete body)."""
        key, data = _request(url, body, headers)
        deadline = time.monotonic() + timeout_s
        if self._slots is not None:  # the wait for a slot counts against the deadline, as in :meth:`post`
            async with asyncio.timeout(timeout_s):
                await self._slots.acquire()
        stream: Http1Stream | None = None
        try:
            stream = await self._open(key, data, connect_timeout_s)  # a connect is bounded by its own timeout
            stream.set_deadline(deadline)
            await stream.wait_head()
            return stream
        except BaseException:
            if stream is not None:
                stream.close()
            elif self._slots is not None:
                self._slots.release()
            raise

    async def _open(self, key: tuple[str, int], data: bytes, connect_timeout_s: float) -> Http1Stream:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if conn.closed or conn.buf:
                conn.close()
                continue
            return Http1Stream(self, key, conn, data)
        return Http1Stream(self, key, await self._connect(*key, connect_timeout_s), data)

    def _release(self, key: tuple[str, int], conn: _Conn, reuse: bool) -> None:
        conn.stream = None
        if reuse and not conn.closed and not conn.buf:
            self._idle.setdefault(key, []).append(conn)
        else:
            conn.close()
        if self._slots is not None:
            self._slots.release()

    async def _request(
        self, key: tuple[str, int], host: str, port: int, data: bytes, connect_timeout_s: float
    ) -> tuple[int, bytes]:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if conn.closed or conn.buf:
                conn.close()
                continue
            try:
                return await self._send(key, conn, data)
            except aiohttp.ServerDisconnectedError:
                if conn.received:
                    raise
                continue  # the server closed an idle connection before reading: try another
        conn = await self._connect(host, port, connect_timeout_s)
        return await self._send(key, conn, data)

    async def _connect(self, host: str, port: int, timeout_s: float) -> _Conn:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout_s):
                _, conn = await loop.create_connection(_Conn, host, port)
        except TimeoutError:
            raise aiohttp.ConnectionTimeoutError(f"connecting to {host}:{port} took over {timeout_s:.1f}s") from None
        except OSError as err:
            raise aiohttp.ClientConnectionError(f"cannot connect to {host}:{port}: {err}") from None
        return conn

    async def _send(self, key: tuple[str, int], conn: _Conn, data: bytes) -> tuple[int, bytes]:
        assert conn.transport is not None
        conn.received = False
        conn.waiter = asyncio.get_running_loop().create_future()
        ok = False
        try:
            conn.transport.write(data)
            status, body, keep_alive = await conn.waiter
            ok = keep_alive and not conn.buf and not conn.closed
            return status, body
        finally:
            conn.waiter = None
            if ok:
                self._idle.setdefault(key, []).append(conn)
            else:
                conn.close()

    def close(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()


@lru_cache(maxsize=256)
def _target(url: str) -> tuple[tuple[str, int], str]:
    """``(host, port)`` of ``url`` and the request's first lines up to its Content-Length."""
    parts = urlsplit(url)
    line = f"POST {parts.path or '/'}{'?' + parts.query if parts.query else ''} HTTP/1.1"
    return (parts.hostname or "", parts.port or 80), f"{line}\r\nHost: {parts.netloc}\r\nContent-Length: "


def _request(url: str, body: bytes, headers: dict[str, str]) -> tuple[tuple[str, int], bytes]:
    key, start = _target(url)
    head = "".join([start, str(len(body)), *[f"\r\n{k}: {v}" for k, v in headers.items()], "\r\n\r\n"])
    return key, head.encode("latin-1") + body


class Http1Stream:
    """One response read as it arrives: :attr:`status` once the head is in, then :meth:`read` until ``b""``.

    A server that closes an idle kept-alive connection before answering is not retried here (the caller's
    retry loop sees ``aiohttp.ServerDisconnectedError`` before any byte, as for a refused connection)."""

    def __init__(self, pool: Http1Pool, key: tuple[str, int], conn: _Conn, data: bytes) -> None:
        self._pool = pool
        self._key = key
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
            self._pool._release(self._key, self._conn, self.complete and self.keep_alive)

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
            self.status, self._left, self._chunked, self.keep_alive = _head(bytes(buf[:end]))
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
