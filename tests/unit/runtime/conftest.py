"""Helpers for runtime tests: process-table checks and a Unix-socket HTTP server on the host."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest


def pids_with(marker: str) -> list[int]:
    """Live pids whose command line contains ``marker`` (zombies excluded)."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if marker in cmdline and state != "Z" and int(entry.name) != os.getpid():
            found.append(int(entry.name))
    return found


@pytest.fixture
def marker() -> str:
    """A unique `sleep` duration whose presence in /proc/*/cmdline identifies this test's processes."""
    return f"{900 + int(uuid.uuid4().int % 99)}.{uuid.uuid4().int % 10**6:06d}"


@pytest.fixture
def need_bwrap() -> None:
    if shutil.which("bwrap") is None:
        pytest.fail("bwrap not on PATH: install bubblewrap (apt-get install bubblewrap); these tests need it")


async def _http_reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    request = await reader.readuntil(b"\r\n\r\n")
    line = request.split(b"\r\n", 1)[0].decode()
    body = f"hello from {line.split()[1]}".encode()
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
    await writer.drain()
    writer.close()


@pytest.fixture
async def unix_http(tmp_path: Path) -> AsyncIterator[Path]:
    """A minimal HTTP server on a Unix socket in the host (stands in for ProxyServer(unix_path=...))."""
    path = tmp_path / "proxy.sock"
    server = await asyncio.start_unix_server(_http_reply, path=str(path))
    yield path
    server.close()
    await server.wait_closed()


@pytest.fixture
async def tcp_http() -> AsyncIterator[int]:
    server = await asyncio.start_server(_http_reply, host="127.0.0.1", port=0)
    yield server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
