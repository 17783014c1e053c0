"""Where the rank's engine servers are: the recipe's ``inference.endpoints`` or the run dir's published ones."""

from __future__ import annotations

import asyncio
from pathlib import Path

from polar_hpc.config.run import RunConfig
from polar_hpc.wire.endpoints import ENDPOINTS_DIR, read_endpoints

POLL_S = 0.5


async def engine_endpoints(config: RunConfig, run_dir: Path, *, timeout_s: float | None = None) -> list[str]:
    """Base URLs of the inference servers; waits (bounded) until ``inference.num_servers`` are published."""
    inf = config.inference
    if inf.endpoints:
        return list(inf.endpoints)
    want = max(1, inf.num_servers)
    limit = config.launch.wait_timeout_s if timeout_s is None else timeout_s
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while True:
        found = read_endpoints(run_dir, "inference-")
        if len(found) >= want:
            return [e.url for e in found]
        if loop.time() >= deadline:
            if found:
                return [e.url for e in found]
            raise TimeoutError(
                f"waited {limit:.0f}s for inference endpoints in {Path(run_dir) / ENDPOINTS_DIR} "
                f"(want {want} files inference-*.json, found none); set inference.endpoints for external servers"
            )
        await asyncio.sleep(POLL_S)
