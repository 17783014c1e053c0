"""Loading a trainer's new weights on every inference server, across a server's restart.

``policy.json`` is written first: a server that starts from then on loads it before it publishes its endpoint
(``inference.server.ServerJob``). Then every published server is paused, loaded and continued, each on its own.
A server that fails the push and is gone (no answer on ``/health``: its job was requeued at a time limit, or
restarted in place) is waited for: once its next endpoint is published, the push loads it there too (the same
version twice is harmless), for up to ``restart_wait_s``; one that answers again under the same endpoint was only
busy, and is pushed to again. A server that fails while it answers ``/health`` could not
load the checkpoint: that raises at once, and ``policy.json`` goes back to what it said before, so a later
restart does not fail on the checkpoint this push could not load.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiohttp

from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.log import get_logger
from polar_hpc.wire.endpoints import Endpoint, read_endpoints
from polar_hpc.wire.rundir import PolicyRecord, RunDir, component_prefix

log = get_logger("train")
POLL_S = 1.0
HEALTH_TIMEOUT_S = 5.0


def _key(ep: Endpoint) -> tuple[str, str, int, float]:
    """One server's life: a restart publishes another pid and start time."""
    return (ep.name, ep.url, ep.pid, ep.started_at)


async def push_policy(run_dir: str | Path, record: PolicyRecord, *, pause_mode: str | None, restart_wait_s: float,
                      api_key: str | None) -> None:
    """Load ``record`` on every inference server of ``run_dir`` (paused with ``pause_mode``; ``None``: not paused).

    Raises ``FileNotFoundError`` when the run has no inference endpoint, the engine's error when a server that
    answers could not load it, ``TimeoutError`` when a server that went away has not come back within
    ``restart_wait_s``."""
    run = RunDir(run_dir)
    before = run.policy()
    run.write_policy(record)
    deadline = time.monotonic() + restart_wait_s
    loaded: set[tuple[str, str, int, float]] = set()
    gone: dict[str, Endpoint] = {}
    try:
        while True:
            current = read_endpoints(run_dir, component_prefix("inference"))
            todo = [ep for ep in current
                    if _key(ep) not in loaded and not (ep.name in gone and _key(ep) == _key(gone[ep.name]))]
            if not todo and not gone:
                if not loaded:
                    raise FileNotFoundError(f"no inference endpoints (endpoints/inference-*.json) in {run_dir}")
                return
            if not todo:
                listed = {_key(ep) for ep in current}
                slow = [n for n, ep in gone.items() if _key(ep) in listed and await _answers(ep.url, api_key)]
                for name in slow:  # it answers again under the same endpoint: it was busy, not gone
                    del gone[name]
                if slow:
                    continue
                if time.monotonic() >= deadline:
                    names = ", ".join(f"{ep.name} ({ep.url})" for ep in gone.values())
                    raise TimeoutError(f"weight version {record.version}: {names} stopped answering and published "
                                       f"no new endpoint within {restart_wait_s:.0f}s")
                await asyncio.sleep(POLL_S)
                continue
            outcomes = await asyncio.gather(*(_load(ep.url, record, pause_mode, api_key) for ep in todo),
                                            return_exceptions=True)
            for ep, out in zip(todo, outcomes, strict=True):
                if not isinstance(out, BaseException):
                    loaded.add(_key(ep))
                    gone.pop(ep.name, None)
                elif isinstance(out, Exception) and not await _answers(ep.url, api_key):
                    log.warning("%s at %s went away during the push of weight version %s (%s); waiting up to "
                                "%.0fs for its restart (it loads %s itself)", ep.name, ep.url, record.version, out,
                                max(0.0, deadline - time.monotonic()), record.path)
                    gone[ep.name] = ep
                else:
                    raise out
    except BaseException:
        if before is None:
            run.policy_path.unlink(missing_ok=True)
        else:
            run.write_policy(before)
        raise


async def _load(url: str, record: PolicyRecord, pause_mode: str | None, api_key: str | None) -> None:
    engine = SGLangEngine([url], api_key=api_key)
    try:
        if pause_mode is None:
            await engine.update_weights_from_disk(record.path, record.version)
            return
        await engine.pause_generation(pause_mode)
        try:
            await engine.update_weights_from_disk(record.path, record.version)
        finally:
            await engine.continue_generation()
    finally:
        await engine.close()


async def _answers(url: str, api_key: str | None) -> bool:
    """Whether the server at ``url`` answers ``GET /health`` below 500 (alive, whatever its generation is doing)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        async with aiohttp.ClientSession() as http, http.get(
            f"{url}/health", headers=headers, timeout=aiohttp.ClientTimeout(total=HEALTH_TIMEOUT_S)
        ) as resp:
            return resp.status < 500
    except (aiohttp.ClientError, TimeoutError, OSError):
        return False
