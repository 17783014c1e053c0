"""A minimal keep-alive HTTP/1.1 POST client for the hot ``/generate`` call (plain ``http://`` only).

aiohttp's client costs ≈0.3 CPU-ms per request; this one writes one buffer and parses one response
(``Content-Length`` or chunked) in a protocol, ≈0.07 ms. Failures raise aiohttp's exception types so callers
handle both clients alike: refused/reset/closed connections ``aiohttp.ClientConnectionError``, connect
timeouts ``aiohttp.ConnectionTimeoutError``, a malformed response ``aiohttp.ClientPayloadError``. A
connection is reused only after a complete response; a cancelled or timed-out request closes its connection.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

import aiohttp

__all__ = ["Http1Pool"]


class _Conn(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes, bool]] | None = None
        self.closed = False
        self.received = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(
                aiohttp.ServerDisconnectedError(f"connection closed before a complete response ({exc or 'EOF'})")
            )

    def data_received(self, data: bytes) -> None:
        self.received = True
        self.buf += data
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
    lines = bytes(buf[:end]).split(b"\r\n")
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


class Http1Pool:
    """Idle keep-alive connections per ``host:port``; one request per connection at a time."""

    def __init__(self, limit: int = 0) -> None:
        """``limit``: most requests in flight at once over all hosts (more wait for a slot); 0 = no limit."""
        self._idle: dict[tuple[str, int], list[_Conn]] = {}
        self._slots = asyncio.Semaphore(limit) if limit > 0 else None

    @staticmethod
    def supports(url: str) -> bool:
        parts = urlsplit(url)
        return parts.scheme == "http" and parts.hostname is not None

    async def post(
        self, url: str, body: bytes, headers: dict[str, str], timeout_s: float, connect_timeout_s: float
    ) -> tuple[int, bytes]:
        """``(status, body)`` of ``POST url``; raises ``TimeoutError`` once ``timeout_s`` has passed."""
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port or 80
        key = (host, port)
        head = [f"POST {parts.path or '/'}{'?' + parts.query if parts.query else ''} HTTP/1.1",
                f"Host: {parts.netloc}", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        data = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        async with asyncio.timeout(timeout_s):
            if self._slots is None:
                return await self._request(key, host, port, data, connect_timeout_s)
            async with self._slots:
                return await self._request(key, host, port, data, connect_timeout_s)

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
