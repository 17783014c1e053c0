"""Where the rank's engine servers are: the recipe's ``inference.endpoints`` or the run dir's published ones."""

from __future__ import annotations

from pathlib import Path

from polar_hpc.config.run import RunConfig
from polar_hpc.gateway.waits import wait_for_endpoints
from polar_hpc.wire.rundir import component_name


async def engine_endpoints(config: RunConfig, run_dir: Path, *, timeout_s: float | None = None,
                           me: str = "gateway") -> list[str]:
    """Base URLs of the inference servers: waits until ``inference.num_servers`` are published (while their jobs
    are queued, without limit; otherwise ``launch.wait_timeout_s`` plus the servers' own ``startup_timeout_s``,
    since a running server job may take that long to become healthy), or goes on with the ones published once the
    others cannot come (their jobs ended) or the deadline passed."""
    inf = config.inference
    if inf.endpoints:
        return list(inf.endpoints)
    names = [component_name("inference", i) for i in range(max(1, inf.num_servers))]
    limit = config.launch.wait_timeout_s + inf.startup_timeout_s if timeout_s is None else timeout_s
    found = await wait_for_endpoints(Path(run_dir), names, me=me, timeout_s=limit, min_found=1)
    return [e.url for e in found]
