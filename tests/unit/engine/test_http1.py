"""Http1Pool against real servers: keep-alive reuse, chunked bodies, closed connections, timeouts, refusals."""

from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest
from aiohttp import web

from polar_hpc.engine.http1 import Http1Pool


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = _free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, f"http://127.0.0.1:{port}"


def test_post_reuses_connections_and_reads_every_body_kind() -> None:
    peers: set[int] = set()

    async def echo(req: web.Request) -> web.StreamResponse:
        assert req.transport is not None
        peers.add(req.transport.get_extra_info("peername")[1])
        body = await req.read()
        if req.path == "/chunked":
            resp = web.StreamResponse(status=201)
            resp.enable_chunked_encoding()
            await resp.prepare(req)
            for i in range(0, len(body), 3):
                await resp.write(body[i : i + 3])
            await resp.write_eof()
            return resp
        if req.path == "/close":
            return web.Response(body=body, status=503, headers={"Connection": "close"})
        return web.Response(body=body + req.headers.get("Authorization", "").encode())

    async def run() -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", echo)
        runner, base = await _serve(app)
        pool = Http1Pool()
        try:
            for _ in range(5):
                assert await pool.post(f"{base}/x", b"hello", {"Authorization": "Bearer k"}, 5, 5) == (
                    200, b"helloBearer k")
            assert len(peers) == 1  # one keep-alive connection
            assert await pool.post(f"{base}/chunked", b"0123456789" * 50, {}, 5, 5) == (201, b"0123456789" * 50)
            assert await pool.post(f"{base}/close", b"bye", {}, 5, 5) == (503, b"bye")
            assert await pool.post(f"{base}/x", b"", {}, 5, 5) == (200, b"")
            assert len(peers) == 2  # the closed connection was not reused
        finally:
            pool.close()
            await runner.cleanup()

    asyncio.run(run())


def test_idle_connection_closed_by_server_is_replaced() -> None:
    async def run() -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            writer.close()  # keep-alive promised, then the server drops the idle connection

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = Http1Pool()
        try:
            for _ in range(3):
                assert await pool.post(f"http://127.0.0.1:{port}/g", b"{}", {}, 5, 5) == (200, b"ok")
                await asyncio.sleep(0.05)
        finally:
            pool.close()
            server.close()
            await server.wait_closed()

    asyncio.run(run())


def test_timeout_refusal_and_mid_response_close() -> None:
    async def run() -> None:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            if b"/slow" in head:
                await asyncio.sleep(5)
            else:  # half a response, then EOF
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
                await writer.drain()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = Http1Pool()
        try:
            with pytest.raises(TimeoutError):
                await pool.post(f"http://127.0.0.1:{port}/slow", b"{}", {}, 0.2, 5)
            t0 = asyncio.get_running_loop().time()
            with pytest.raises(TimeoutError):  # a streamed call whose head does not come in time
                await pool.stream(f"http://127.0.0.1:{port}/slow", b"{}", {}, 0.2, 5)
            assert asyncio.get_running_loop().time() - t0 < 3 and not any(pool._idle.values())
            with pytest.raises(aiohttp.ServerDisconnectedError):
                await pool.post(f"http://127.0.0.1:{port}/cut", b"{}", {}, 5, 5)
            assert not any(pool._idle.values())
            with pytest.raises(aiohttp.ClientConnectionError):
                await pool.post(f"http://127.0.0.1:{_free_port()}/g", b"{}", {}, 5, 5)
        finally:
            pool.close()
            server.close()
            await server.wait_closed()

    asyncio.run(run())


def test_supports_plain_http_only() -> None:
    assert Http1Pool.supports("http://10.0.0.1:30000")
    assert not Http1Pool.supports("https://10.0.0.1:30000")




def test_limit_bounds_requests_in_flight() -> None:
    state = {"now": 0, "peak": 0}

    async def slow(req: web.Request) -> web.Response:
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await asyncio.sleep(0.05)
        state["now"] -= 1
        return web.Response(body=await req.read())

    async def run() -> None:
        app = web.Application()
        app.router.add_post("/g", slow)
        runner, base = await _serve(app)
        pool = Http1Pool(limit=2)
        try:
            got = await asyncio.gather(*(pool.post(f"{base}/g", b"%d" % i, {}, 5, 5) for i in range(8)))
            assert got == [(200, b"%d" % i) for i in range(8)]
            assert state["peak"] == 2
        finally:
            pool.close()
            await runner.cleanup()

    asyncio.run(run())


def test_streamed_chunked_bodies_in_any_cut() -> None:
    """A raw server sends chunked bodies cut at random points (chunk data holding CRLFs, a trailer): the
    streamed body is exactly the data, whichever parser (whole chunks at once, or chunk by chunk) reads it."""
    import random

    rng = random.Random(1)
    cases = []
    for trial in range(40):
        datas = [bytes(rng.choice(b"ab\r\n:x0") for _ in range(rng.randint(1, 40))) for _ in range(rng.randint(0, 60))]
        trailer = b"X-Trailer: 1\r\n" if trial % 3 == 0 else b""
        wire = b"".join(b"%x\r\n" % len(d) + d + b"\r\n" for d in datas) + b"0\r\n" + trailer + b"\r\n"
        cuts = sorted(rng.sample(range(1, len(wire)), min(len(wire) - 1, rng.randint(0, 12))))
        cases.append((b"".join(datas), [wire[a:b] for a, b in zip([0, *cuts], [*cuts, len(wire)], strict=True)]))

    async def main() -> None:
        pieces: list[list[bytes]] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                for piece in pieces.pop(0):
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0)

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/generate"
        pool = Http1Pool()
        try:
            for body, cut in cases:
                pieces.append(cut)
                stream = await pool.stream(url, b"{}", {}, 10, 5)
                got = b""
                while data := await stream.read():
                    got += data
                assert got == body and stream.complete
                stream.close()
        finally:
            pool.close()
            server.close()

    asyncio.run(main())
