"""Sandbox start overhead: a whole session lifecycle (start → exec `true` → stop) per backend.

Rows: a plain subprocess (``asyncio.create_subprocess_exec`` of ``/usr/bin/true``), the ``local`` runtime, and the
``bwrap`` runtime with shared and with unshared network (the latter with the proxy socket bridge, so the
in-sandbox forwarder starts too, or with the hand-off, whose shim execs into the command). Each sample is one
fresh runtime: start, one exec, stop. The bwrap start probe
runs once per process (the first, warm-up iteration), as in a gateway rank.

    python tools/bench/bench_sandbox.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import tempfile
from pathlib import Path

from common import proxy_socket_stub, sandbox_lifecycle, serve_listener_stub, timed

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.runtime.process import run_command


async def main(repeats: int) -> None:
    logging.getLogger("polar_hpc").setLevel(logging.ERROR)
    root = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    sock_path = root / "proxy.sock"
    server = await proxy_socket_stub(sock_path)

    async def plain() -> None:
        res = await asyncio.create_subprocess_exec("/usr/bin/true")
        await res.wait()

    async def plain_tree() -> None:
        await run_command(["/usr/bin/true"], env={"PATH": os.environ["PATH"]})

    local, bwrap = RuntimeSpec(backend="local"), RuntimeSpec(backend="bwrap")
    no_net = RuntimeSpec(backend="bwrap", network="none")
    no_net_fwd = RuntimeSpec(backend="bwrap", network="none", bridge="forwarder")
    rows = [
        ("plain subprocess (create_subprocess_exec)", await timed(plain, repeats)),
        ("run_command (pgroup, pidfd, pipes)", await timed(plain_tree, repeats)),
        ("local runtime start→exec→stop", await timed(sandbox_lifecycle(local, root), repeats)),
        ("bwrap, shared net", await timed(sandbox_lifecycle(bwrap, root), repeats)),
        ("bwrap, net none, no bridge", await timed(sandbox_lifecycle(no_net, root), repeats)),
        ("bwrap, net none + UDS bridge", await timed(sandbox_lifecycle(no_net_fwd, root, sock_path), repeats)),
        ("bwrap, net none + hand-off", await timed(sandbox_lifecycle(no_net, root, None, serve_listener_stub),
                                                    repeats)),
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
