"""RUN-slot busy fraction of the stage pools vs a sequential gateway, under a simulated clock.

Both gateways get the same sessions (INIT ≈ RUN durations, jittered) and the same number of RUN slots. The
pooled one is the real ``StagePools`` code; the sequential one runs start → prepare → run → postrun per slot.
Time is virtual (``polar_hpc.sim.clock``), so the figures are exact and independent of the machine.

    python tools/bench/bench_pools.py [--sessions 400] [--run-slots 8] [--init-s 60] [--run-s 60] [--jitter 0.3]
"""

from __future__ import annotations

import argparse
import asyncio
import random

from polar_hpc.config.run import GatewayConfig, RunConfig
from polar_hpc.gateway.pools import StagePools
from polar_hpc.gateway.stages import SessionJob
from polar_hpc.sim.clock import run_simulated
from polar_hpc.sim.executor import SimulatedExecutor
from polar_hpc.wire.resolved import resolve_session
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.session import Session, Task


def make_executor(args: argparse.Namespace) -> SimulatedExecutor:
    rng = random.Random(args.seed)
    table: dict[tuple[str, str], float] = {}

    def jittered(step: str, mean: float):  # type: ignore[no-untyped-def]
        def duration(job: SessionJob) -> float:
            key = (job.session_id, step)
            if key not in table:
                table[key] = mean * rng.uniform(1 - args.jitter, 1 + args.jitter)
            return table[key]
        return duration

    return SimulatedExecutor({
        "start": jittered("start", args.init_s * 0.3),
        "prepare": jittered("prepare", args.init_s * 0.7),
        "run": jittered("run", args.run_s),
        "build": 0.5, "evaluate": jittered("evaluate", args.postrun_s), "teardown": 1.0,
    })


def sessions(n: int) -> list[Session]:
    return [Session(task=Task(task_id=f"task{i:05d}", instruction="x"), sample_index=0) for i in range(n)]


def busy_fraction(ex: SimulatedExecutor, slots: int) -> tuple[float, float, float]:
    """(whole run: t=0 .. last RUN end, steady: first RUN start .. last RUN start, makespan)."""
    runs = [iv for iv in ex.intervals if iv.step == "run"]
    end = max(iv.end for iv in runs)
    first = min(iv.start for iv in runs)
    last_start = max(iv.start for iv in runs)
    whole = ex.busy_time("run", 0.0, end) / (slots * end)
    steady = ex.busy_time("run", first, last_start) / (slots * (last_start - first))
    return whole, steady, end


async def pooled(args: argparse.Namespace, ex: SimulatedExecutor) -> None:
    cfg = GatewayConfig(init_pool=args.init_slots or args.run_slots, ready_buffer=args.ready,
                        run_pool=args.run_slots, postrun_pool=args.run_slots, start_gate=args.run_slots,
                        session_timeout_s=1e9, agent_timeout_s=1e9)

    async def sink(result: SessionResult) -> None:
        pass

    pools = StagePools(cfg, ex, sink)
    for s in sessions(args.sessions):
        pools.submit(resolve_session(s, RunConfig(gateway=cfg)))
    await pools.wait_idle()


async def sequential(args: argparse.Namespace, ex: SimulatedExecutor) -> None:
    config = RunConfig()
    queue = [resolve_session(s, config) for s in sessions(args.sessions)]
    loop = asyncio.get_running_loop()

    async def slot() -> None:
        while queue:
            job = SessionJob(queue.pop(0), loop.time())
            await ex.start(job)
            await ex.prepare(job)
            outcome = await ex.run(job, 1e9)
            traj = await ex.build(job, outcome.trace_status)
            await ex.evaluate(job, traj)
            await ex.teardown(job)

    await asyncio.gather(*(slot() for _ in range(args.run_slots)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=400)
    p.add_argument("--run-slots", type=int, default=8)
    p.add_argument("--init-slots", type=int, default=0, help="default: as many as RUN slots")
    p.add_argument("--ready", type=int, default=4)
    p.add_argument("--init-s", type=float, default=60.0)
    p.add_argument("--run-s", type=float, default=60.0)
    p.add_argument("--postrun-s", type=float, default=10.0)
    p.add_argument("--jitter", type=float, default=0.3, help="durations uniform in mean × [1-j, 1+j]")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    rows = []
    for name, fn in (("stage pools", pooled), ("sequential", sequential)):
        ex = make_executor(args)
        run_simulated(fn(args, ex))
        rows.append((name, *busy_fraction(ex, args.run_slots)))
    print(f"{args.sessions} sessions, {args.run_slots} RUN slots, INIT≈{args.init_s:.0f}s RUN≈{args.run_s:.0f}s "
          f"(±{args.jitter:.0%}), ready buffer {args.ready}, virtual clock")
    print(f"{'gateway':<12} {'busy (whole run)':>17} {'busy (steady)':>14} {'makespan s':>11}")
    for name, whole, steady, span in rows:
        print(f"{name:<12} {whole:>17.1%} {steady:>14.1%} {span:>11.0f}")
    print(f"ratio pools/sequential (whole run): {rows[0][1] / rows[1][1]:.2f}x")


if __name__ == "__main__":
    main()
