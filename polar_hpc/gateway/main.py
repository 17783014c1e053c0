"""The rank process body: serve the coordinator over the control plane; SIGTERM → drain and commit."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from polar_hpc.config.run import RunConfig
from polar_hpc.gateway.control import GatewayControl
from polar_hpc.gateway.rank import GatewayRank
from polar_hpc.log import get_logger
from polar_hpc.util.limits import raise_open_files

log = get_logger("gateway")

EXIT_DRAINED = 143


async def run_rank(cfg: RunConfig, rank_id: int, run_dir: Path, *, keep_session_dirs: bool = False) -> int:
    before, after = raise_open_files()
    if after != before:
        log.info("rank %d: open files limit raised from %d to %d (the hard limit)", rank_id, before, after)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    rank = GatewayRank(cfg, rank_id, run_dir, keep_session_dirs=keep_session_dirs)
    try:
        if not await _start_unless_stopped(rank, stop):
            log.info("rank %d: signal received while starting; exiting", rank_id)
            return EXIT_DRAINED
        finished = await _run_controlled(rank, cfg, rank_id, run_dir, stop)
        if not finished:
            log.info("rank %d: signal received, draining", rank_id)
        await rank.drain(None if not finished else 0.0)
        return 0 if finished else EXIT_DRAINED
    finally:
        await rank.close()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


async def _start_unless_stopped(rank: GatewayRank, stop: asyncio.Event) -> bool:
    """``rank.start()`` (which waits for the inference endpoints), cut short by SIGTERM: False if stopped."""
    starting = asyncio.create_task(rank.start())
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait([starting, stopper], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    if starting.done():
        starting.result()  # a failed start (WaitFailed naming what did not come) ends the rank
        return True
    starting.cancel()
    await asyncio.gather(starting, return_exceptions=True)
    return False


async def _run_controlled(rank: GatewayRank, cfg: RunConfig, rank_id: int, run_dir: Path,
                          stop: asyncio.Event) -> bool:
    control = GatewayControl(rank, run_dir, rank_id=rank_id, proxy_endpoint=rank.proxy_url,
                             heartbeat_interval_s=cfg.coordinator.heartbeat_interval_s,
                             heartbeat_timeout_s=cfg.coordinator.heartbeat_timeout_s)
    runner = asyncio.create_task(control.run())
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait([runner, stopper], return_when=asyncio.FIRST_COMPLETED)
    if stop.is_set() and not runner.done():
        control.request_drain("signal")
        await runner
        return False
    stopper.cancel()
    await runner
    return True
