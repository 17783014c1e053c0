"""``runtime.bridge = "handoff"`` in bwrap, for real: each command's listening socket, bound in the sandbox's own
network namespace, is handed to the rank and served there; no process of ours stays in the sandbox, the proxy's
Unix socket is not bound in, and a sandbox's listener carries its own connections only (each served apart)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.runtime import make_runtime
from polar_hpc.runtime.base import FORWARD_PORT, SANDBOX_FORWARDER, SANDBOX_PROXY_SOCKET
from polar_hpc.runtime.bwrap import bwrap_argv
from polar_hpc.runtime.common import SandboxBase
from polar_hpc.runtime.handoff import StopServing, checked_listener
from tests.unit.runtime.conftest import pids_with

GET = ("import urllib.request as u\n"
       f"print(u.urlopen('http://127.0.0.1:{FORWARD_PORT}/v1/models').read().decode())\n")


def test_golden_argv_hands_off_and_binds_no_proxy_socket(tmp_path: Path) -> None:
    spec = RuntimeSpec(backend="bwrap", network="none", bridge="handoff")
    argv = bwrap_argv(spec, session_dir=Path("/s"), tmp_dir=Path("/t"), cmd=["sh", "-c", "x"], cwd="/polar/session",
                      proxy_socket=None, handoff_fd=7, bwrap="bwrap", root=[])
    assert SANDBOX_PROXY_SOCKET not in argv
    assert argv[argv.index("--") + 1:] == ["python3", "-I", "-S", SANDBOX_FORWARDER, "--listen",
                                           f"127.0.0.1:{FORWARD_PORT}", "--handoff", "7", "--", "sh", "-c", "x"]


def test_checked_listener_takes_one_tcp_listener_only() -> None:
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen()
    got = checked_listener([lst.detach()])
    assert got is not None and got.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) == 1
    got.close()
    unbound = socket.socket()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    a, b = socket.socketpair()
    for fds in ([unbound.detach()], [udp.detach()], [a.detach()]):
        assert checked_listener(fds) is None
    b.close()


@pytest.fixture
async def sessions(tmp_path: Path, need_bwrap: None) -> AsyncIterator[Callable[..., object]]:
    """Sandboxes whose handed-off listeners each answer with their own name."""
    started: list[SandboxBase] = []

    async def make(name: str) -> SandboxBase:
        async def serve(listener: socket.socket) -> StopServing:
            async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                await reader.readuntil(b"\r\n\r\n")
                body = f"session {name}".encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                             % (len(body), body))
                await writer.drain()
                writer.close()

            server = await asyncio.start_server(reply, sock=listener)

            async def stop() -> None:
                server.close()

            return stop

        spec = RuntimeSpec(backend="bwrap", network="none", bridge="handoff")
        rt = make_runtime(spec, tmp_path / name, proxy_socket=None, serve_listener=serve)
        assert isinstance(rt, SandboxBase) and rt.handoff and rt.bridged
        await rt.start()
        started.append(rt)
        return rt

    yield make
    for rt in started:
        await rt.stop()


async def test_each_sandbox_reaches_its_own_listener_with_no_forwarder_left(sessions) -> None:  # type: ignore[no-untyped-def]
    a, b = await sessions("a"), await sessions("b")
    script = GET + ("import os\n"
                    "print(os.path.exists('/polar/proxy.sock'))\n"
                    "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n")
    ra, rb = await asyncio.gather(a.exec(["python3", "-c", script], timeout_s=30),
                                  b.exec(["python3", "-c", script], timeout_s=30))
    assert ra.ok and rb.ok, (ra.stderr, rb.stderr)
    out_a, out_b = ra.stdout.splitlines(), rb.stdout.splitlines()
    assert out_a[0] == "session a" and out_b[0] == "session b"
    assert out_a[1] == out_b[1] == "False", "no proxy socket shared into a sandbox"
    # the sandbox's pid 1 (bwrap) and the command: the shim exec'd into it, no forwarder beside it
    assert out_a[2] == "[1, 2]", out_a[2]
    assert pids_with("uds_forward.py") == []


async def test_a_command_that_never_hands_off_still_runs(sessions) -> None:  # type: ignore[no-untyped-def]
    rt = await sessions("quiet")
    res = await rt.exec(["sh", "-c", "echo ok"], timeout_s=30)
    assert res.ok and res.stdout.strip() == "ok"
    # later commands get a fresh listener each
    res = await rt.exec(["python3", "-c", GET], timeout_s=30)
    assert res.ok and res.stdout.strip() == "session quiet", res.stderr
