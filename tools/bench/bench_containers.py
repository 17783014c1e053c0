"""Container runtime vs bwrap, and `images prepare` throughput, side by side in one run.

Lifecycle rows: one fresh runtime per sample — start, one exec of ``true``, stop — for bwrap (host root) and
podman (the local SWE base image), with ``network = "none"`` and the proxy socket bridge as a gateway runs them;
then the per-exec cost alone inside a running sandbox (an SWE session execs many commands into one container).
Prepare rows: ``images prepare`` of N local images built from one small context each on the base image (what the
offline task set does), fresh (all built) and resumed (all cached), as images per minute.

    python tools/bench/bench_containers.py [--repeats 10] [--images 6] [--parallel 2]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from common import proxy_socket_stub, sandbox_lifecycle, timed

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.images.base import SWE_BASE_IMAGE
from polar_hpc.images.prepare import ImageJob, prepare
from polar_hpc.runtime import make_runtime


async def lifecycles(root: Path, repeats: int) -> list[tuple[str, tuple[float, float]]]:
    sock_path = root / "proxy.sock"
    server = await proxy_socket_stub(sock_path)
    counter = iter(range(10**9))

    async def per_exec(spec: RuntimeSpec) -> tuple[float, float]:
        rt = make_runtime(spec, root / f"e{next(counter)}", proxy_socket=sock_path)
        await rt.start()

        async def one() -> None:
            assert (await rt.exec(["true"])).ok

        try:
            return await timed(one, repeats)
        finally:
            await rt.stop()

    bwrap = RuntimeSpec(backend="bwrap", network="none")
    podman = RuntimeSpec(backend="podman", network="none", image=SWE_BASE_IMAGE)
    rows = [("bwrap start→exec→stop", await timed(sandbox_lifecycle(bwrap, root, sock_path), repeats)),
            ("podman start→exec→stop", await timed(sandbox_lifecycle(podman, root, sock_path), repeats)),
            ("bwrap one exec", await per_exec(bwrap)),
            ("podman one exec (into the running container)", await per_exec(podman))]
    server.close()
    return rows


def prepare_rate(root: Path, n: int, parallel: int) -> tuple[float, float]:
    jobs = []
    for i in range(n):
        ctx = root / f"ctx{i}"
        ctx.mkdir()
        (ctx / "README").write_text(f"bench image {i}\n")
        jobs.append(ImageJob(f"localhost/polar-bench/img-{i}:{os.getpid()}", context=str(ctx), base=SWE_BASE_IMAGE))
    cache = root / "cache"
    try:
        t0 = time.perf_counter()
        manifest = prepare("podman", cache, jobs, parallel=parallel)
        fresh = time.perf_counter() - t0
        assert all(r.status == "ok" for r in manifest.images.values()), manifest
        t0 = time.perf_counter()
        prepare("podman", cache, jobs, parallel=parallel)
        resumed = time.perf_counter() - t0
    finally:
        subprocess.run(["podman", "rmi", "-f", *(j.ref for j in jobs)], capture_output=True, timeout=300)
    return n / fresh * 60, n / resumed * 60


def main(repeats: int, images: int, parallel: int) -> None:
    logging.getLogger("polar_hpc").setLevel(logging.ERROR)
    if shutil.which("podman") is None:
        raise SystemExit("podman is not on PATH (tools/setup.sh installs it)")
    root = Path(tempfile.mkdtemp(prefix="bench-containers-"))
    try:
        rows = asyncio.run(lifecycles(root, repeats))
        fresh, resumed = prepare_rate(root, images, parallel)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{repeats} samples each, {os.cpu_count()} CPUs, network none + proxy socket bridge")
    print(f"{'lifecycle':48} {'median ms':>10} {'min ms':>8} {'x bwrap':>8}")
    for i, (label, (med, best)) in enumerate(rows):
        base = rows[0 if i < 2 else 2][1][0]
        print(f"{label:48} {med:10.1f} {best:8.1f} {med / base:8.1f}")
    print(f"images prepare, {images} images built from a context on {SWE_BASE_IMAGE}, {parallel} at once:")
    print(f"  fresh   {fresh:8.1f} images/min")
    print(f"  resumed {resumed:8.1f} images/min (all cached: the plan only)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--images", type=int, default=6)
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args()
    main(args.repeats, args.images, args.parallel)
