"""A simulated gateway rank: stands in for ``GatewayRank`` in control-plane tests and benchmarks.

It takes sessions, "runs" each for ``duration_s`` (sleep), builds a small real ``SessionResult`` and writes it
through the real ``ShardWriter`` (commit every ``commit_every`` results, or on drain). Run it as a process with
``python -m polar_hpc.sim.rank --run-dir D --rank N`` so tests can SIGKILL / SIGTERM it.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from polar_hpc.config.run import ShardConfig
from polar_hpc.gateway.stages import Stage
from polar_hpc.log import get_logger, setup_logging
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.session import Session
from polar_hpc.wire.traces import EvalResult, Trace, TraceStatus, Trajectory

log = get_logger("simrank")


def fake_result(session: Session, rank: int, tokens: int = 16) -> SessionResult:
    ids = np.arange(tokens, dtype=np.int32)
    trace = Trace(prompt_ids=ids, response_ids=ids[: tokens // 2], loss_mask=np.ones(tokens // 2, np.uint8),
                  response_logprobs=np.zeros(tokens // 2, np.float32), reward=1.0)
    return SessionResult(task_id=session.task.task_id, sample_index=session.sample_index, attempt=session.attempt,
                         trajectory=Trajectory(status=TraceStatus.COMPLETED, traces=[trace]),
                         evaluation=EvalResult(outcome_reward=1.0), gateway_rank=rank, harness="simulated")


class SimulatedRank:
    def __init__(self, run_dir: Path, rank: int, *, capacity: int = 4, duration_s: float = 0.05,
                 commit_every: int = 4, write_shards: bool = True, drain_grace_s: float = 30.0) -> None:
        self.rank = rank
        self._capacity = capacity
        self.duration_s = duration_s
        self.commit_every = commit_every
        self.drain_grace_s = drain_grace_s
        self.on_status: Callable[[str, Stage], None] | None = None
        self.on_done: Callable[[SessionResult], None] | None = None
        self.on_commit: Callable[[Path, list[str]], None] | None = None
        self.running: dict[str, asyncio.Task[None]] = {}
        self.draining = False
        self.writer = None
        if write_shards:
            from polar_hpc.store.writer import ShardWriter

            self.writer = ShardWriter(RunDir(run_dir).shards, rank, ShardConfig(max_sessions=10**9, max_age_s=1e9),
                                      producer={"harness": "simulated"}, on_commit=self._committed)
        self._pending = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def paused(self) -> bool:
        return False

    def occupancy(self) -> dict[str, int]:
        return {"run": len(self.running)}

    def _committed(self, path: Path, keys: list[str]) -> None:
        if self.on_commit is not None:
            self.on_commit(path, keys)

    def submit(self, session: Session) -> None:
        if self.draining:
            raise RuntimeError("draining")
        self.running[session.session_id] = asyncio.get_running_loop().create_task(self._run(session))

    async def cancel(self, session_id: str) -> bool:
        t = self.running.pop(session_id, None)
        if t is not None:
            t.cancel()
        return t is not None

    async def _run(self, session: Session) -> None:
        if self.on_status is not None:
            self.on_status(session.session_id, Stage.RUN)
        try:
            if self.duration_s > 0:
                await asyncio.sleep(self.duration_s)
        except asyncio.CancelledError:  # like the real pools: a session cut before its result says so
            self.running.pop(session.session_id, None)
            if self.on_status is not None:
                self.on_status(session.session_id, Stage.CANCELLED)
            raise
        result = fake_result(session, self.rank)
        self.running.pop(session.session_id, None)
        if self.writer is not None:
            self.writer.add(result)
        if self.on_done is not None:
            self.on_done(result)
        self._pending += 1
        if self.writer is not None and self._pending >= self.commit_every:
            self._pending = 0
            self.writer.commit()

    def commit(self) -> None:
        self._pending = 0
        if self.writer is not None:
            self.writer.commit()

    async def drain(self, grace_s: float | None = None) -> None:
        """Stop taking sessions; let running ones finish within the grace, cancel the rest; commit."""
        self.draining = True
        if self.running:
            tasks = list(self.running.values())
            await asyncio.wait(tasks, timeout=self.drain_grace_s if grace_s is None else grace_s)
            for t in tasks:
                t.cancel()
            await asyncio.wait(tasks, timeout=5.0)
        if self.writer is not None:
            self.writer.close()


async def _main(args: argparse.Namespace) -> int:
    from polar_hpc.gateway.control import GatewayControl

    rank = SimulatedRank(Path(args.run_dir), args.rank, capacity=args.capacity, duration_s=args.duration,
                         commit_every=args.commit_every)
    control = GatewayControl(rank, args.run_dir, rank_id=args.rank, heartbeat_interval_s=args.heartbeat,
                             heartbeat_timeout_s=args.timeout)
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, control.request_drain, "SIGTERM")
    reason = await control.run()
    log.info("simulated rank %d ended: %s", args.rank, reason)
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="simrank")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--rank", type=int, required=True)
    p.add_argument("--capacity", type=int, default=4)
    p.add_argument("--duration", type=float, default=0.05)
    p.add_argument("--commit-every", type=int, default=4)
    p.add_argument("--heartbeat", type=float, default=0.2)
    p.add_argument("--timeout", type=float, default=3.0)
    args = p.parse_args(argv)
    setup_logging()
    return asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
