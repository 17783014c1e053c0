"""Helpers the benchmarks in this folder share. They run as scripts (``python tools/bench/NAME.py``), so this
folder is on ``sys.path`` and they ``import common``."""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.runtime import make_runtime

_sessions = itertools.count()


async def timed(fn: Callable[[], Awaitable[None]], repeats: int) -> tuple[float, float]:
    """(median, min) milliseconds of ``repeats`` awaits of ``fn``, after one warm-up await."""
    await fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples), min(samples)


def sandbox_lifecycle(spec: RuntimeSpec, root: Path, proxy_socket: Path | None = None) -> Callable[[], Awaitable[None]]:
    """One session's sandbox, as a gateway runs it: a fresh runtime under ``root``, start, exec ``true``, stop."""

    async def run() -> None:
        rt = make_runtime(spec, root / f"s{next(_sessions)}", proxy_socket=proxy_socket)
        await rt.start()
        res = await rt.exec(["true"])
        await rt.stop()
        assert res.ok, res.stderr

    return run


async def proxy_socket_stub(path: Path) -> asyncio.Server:
    """A Unix socket where the gateway's proxy would listen (for the sandbox's socket bridge); it closes every
    connection."""
    return await asyncio.start_unix_server(lambda r, w: w.close(), path=str(path))
