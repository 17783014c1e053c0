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
from functools import lru_cache, partial
from urllib.parse import urlsplit

import aiohttp

from polar_hpc.engine.http1_stream import Http1Conn, Http1Stream
from polar_hpc.engine.http1_wire import request_bytes

__all__ = ["Http1Pool", "Http1Stream"]


class Http1Pool:
    """Idle keep-alive connections per ``host:port``; one request per connection at a time."""

    def __init__(self, limit: int = 0) -> None:
        """``limit``: most requests in flight at once over all hosts (more wait for a slot); 0 = no limit."""
        self._idle: dict[tuple[str, int], list[Http1Conn]] = {}
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
        key, data = request_bytes(url, body, headers)
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
        key, data = request_bytes(url, body, headers)
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
            return Http1Stream(partial(self._release, key, conn), conn, data)
        conn = await self._connect(*key, connect_timeout_s)
        return Http1Stream(partial(self._release, key, conn), conn, data)

    def _release(self, key: tuple[str, int], conn: Http1Conn, reuse: bool) -> None:
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

    async def _connect(self, host: str, port: int, timeout_s: float) -> Http1Conn:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout_s):
                _, conn = await loop.create_connection(Http1Conn, host, port)
        except TimeoutError:
            raise aiohttp.ConnectionTimeoutError(f"connecting to {host}:{port} took over {timeout_s:.1f}s") from None
        except OSError as err:
            raise aiohttp.ClientConnectionError(f"cannot connect to {host}:{port}: {err}") from None
        return conn

    async def _send(self, key: tuple[str, int], conn: Http1Conn, data: bytes) -> tuple[int, bytes]:
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
