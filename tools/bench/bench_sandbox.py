"""Sandbox start overhead: a whole session lifecycle (start → exec `true` → stop) per backend.

Rows: a plain subprocess (``asyncio.create_subprocess_exec`` of ``/usr/bin/true``), the ``local`` runtime, and the
``bwrap`` runtime with shared and with unshared network (the latter with the proxy socket bridge, so the
in-sandbox forwarder starts too). Each sample is one fresh runtime: start, one exec, stop. The bwrap start probe
runs once per process (the first, warm-up iteration), as in a gateway rank.

    python tools/bench/bench_sandbox.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.runtime import make_runtime
from polar_hpc.runtime.process import run_command


async def timed(fn: Callable[[], Awaitable[None]], repeats: int) -> tuple[float, float]:
    await fn()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples), min(samples)


async def main(repeats: int) -> None:
    logging.getLogger("polar_hpc").setLevel(logging.ERROR)
    root = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    sock_path = root / "proxy.sock"
    server = await asyncio.start_unix_server(lambda r, w: w.close(), path=str(sock_path))
    counter = iter(range(10**9))

    async def plain() -> None:
        res = await asyncio.create_subprocess_exec("/usr/bin/true")
        await res.wait()

    async def plain_tree() -> None:
        await run_command(["/usr/bin/true"], env={"PATH": os.environ["PATH"]})

    def lifecycle(spec: RuntimeSpec, sock: Path | None = None) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            rt = make_runtime(spec, root / f"s{next(counter)}", proxy_socket=sock)
            await rt.start()
            res = await rt.exec(["true"])
            await rt.stop()
            assert res.ok, res.stderr

        return run

    rows = [
        ("plain subprocess (create_subprocess_exec)", await timed(plain, repeats)),
        ("run_command (pgroup, pidfd, pipes)", await timed(plain_tree, repeats)),
        ("local runtime start→exec→stop", await timed(lifecycle(RuntimeSpec(backend="local")), repeats)),
        ("bwrap, shared net", await timed(lifecycle(RuntimeSpec(backend="bwrap")), repeats)),
        ("bwrap, net none, no bridge", await timed(lifecycle(RuntimeSpec(backend="bwrap", network="none")), repeats)),
        ("bwrap, net none + UDS bridge", await timed(lifecycle(RuntimeSpec(backend="bwrap", network="none"),
                                                                sock_path), repeats)),
    ]
    server.close()
    base_med, base_min = rows[0][1]
    print(f"{repeats} samples each, {os.cpu_count()} CPUs")
    print(f"{'lifecycle':44} {'median ms':>10} {'min ms':>8} {'x plain (median)':>17}")
    for label, (med, best) in rows:
        print(f"{label:44} {med:10.2f} {best:8.2f} {med / base_med:17.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=30)
    asyncio.run(main(parser.parse_args().repeats))
