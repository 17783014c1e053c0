"""The coordinator and the shard writers at cluster scale, simulated: ``--ranks`` × ``--sessions-per-rank``.

1. Coordinator (the real coordinator process, real CURVE ZeroMQ sockets over loopback): ``--ranks`` simulated
   gateway ranks (one child process, a DEALER each, speaking ``wire/control.py`` as ``GatewayControl`` does:
   Hello, 1 Hz heartbeats, SessionStatus per stage, SessionDone with a small real result, Committed every
   ``--commit-every`` results; re-Hello with the sessions they hold when a restarted coordinator refuses them).
   Measured: the dispatch rate (submit → every session held by a rank), the coordinator's CPU while
   ``--hold`` seconds of heartbeats pass with every session in flight, its RSS, the journal's size; then
   ``kill -9`` of the coordinator with every session in flight, and the restart: until its endpoint is up
   (journal replayed) and until every session is adopted from the ranks' Hello again (none dispatched twice);
   last, the completion rate (SessionDone + Committed) and every session committed once.
2. Writers: ``--ranks`` real ``ShardWriter``s (in ``--writer-procs`` processes) committing small sessions into one
   shard dir, a shard every ``--commit-every``; commit rate; ``resume_index`` over the result and the coordinator
   state rebuilt from it (``Coordinator.restore``).
3. Before/after in one run (``DispatchState`` alone, no sockets): adopting ``ranks × sessions-per-rank`` held
   sessions after a restart with the pending queue as it was (``deque.remove`` per adopted key) and as it is now
   (:class:`PendingQueue`); and the dispatch heap's size after a wave completes with nothing queued.
4. Before/after in one run (the real coordinator, ``min(--ranks, 16)`` ranks): its CPU per session with its receive
   loop reading one message per event-loop round (``server.RECV_BATCH = 1``) and in batches (the default).

    nice -n 10 python tools/bench/bench_cluster.py --ranks 64 --sessions-per-rank 1024 --json cluster.json
    python tools/bench/bench_cluster.py --ranks 4 --sessions-per-rank 64 --hold 2     # seconds
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_coordinator import CoordinatorProc
from cluster_sim import RankSim, adoption_compare, run_writers
from common import cpu_s as _cpu_s

from polar_hpc.coordinator.client import RunClient
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.session import Task

SAMPLES = 16
"""Samples per task (a GRPO group): ``sessions / SAMPLES`` tasks."""
HERE = Path(__file__).resolve()


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _status_until(run_dir: Path, pred: Any, timeout_s: float, what: str) -> tuple[float, dict[str, int]]:
    """Poll the coordinator's RunStatus until ``pred(sessions)``; (monotonic time, sessions)."""
    deadline = time.monotonic() + timeout_s
    async with RunClient(run_dir, timeout_s=timeout_s) as client:
        while True:
            st = await client.status()
            if pred(st.sessions, st):
                return time.monotonic(), st.sessions
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not reached in {timeout_s:.0f}s; last status {st.sessions}, "
                                   f"{st.ranks_alive} ranks alive")
            await asyncio.sleep(0.05)


async def _submit(run_dir: Path, total: int) -> None:
    async with RunClient(run_dir, timeout_s=120) as client:
        tasks = [Task(task_id=f"c{i:06d}", instruction="x", num_samples=SAMPLES) for i in range(total // SAMPLES)]
        for i in range(0, len(tasks), 512):
            reply = await client.submit(tasks[i:i + 512])
            if reply.rejected:
                raise RuntimeError(f"submit rejected: {list(reply.rejected.items())[:2]}")


def _settle(pid: int, quiet_pct: float = 3.0, window_s: float = 1.0, timeout_s: float = 300.0) -> float:
    """Wait until ``pid`` uses under ``quiet_pct`` of a core over ``window_s`` (its backlog handled); seconds."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        cpu0 = _cpu_s(pid)
        time.sleep(window_s)
        if 100 * (_cpu_s(pid) - cpu0) / window_s < quiet_pct:
            break
    return time.monotonic() - t0


def _coord(run_dir: Path, args: argparse.Namespace) -> CoordinatorProc:
    return CoordinatorProc(run_dir, heartbeat_interval_s=args.heartbeat, heartbeat_timeout_s=30.0,
                           status_interval_s=5.0)


def bench_coordinator(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    R, S = args.ranks, args.sessions_per_rank
    total = R * S
    run_dir = root / "coord"
    out: dict[str, Any] = {"ranks": R, "sessions_per_rank": S, "sessions": total, "heartbeat_s": args.heartbeat}
    coord = _coord(run_dir, args)
    sim = RankSim(HERE, run_dir, coord.address, R, S, args)
    try:
        t0 = time.monotonic()
        asyncio.run(_status_until(run_dir, lambda s, st: st.ranks_alive == R, 120, "ranks registered"))
        out["connect_s"] = round(time.monotonic() - t0, 2)
        out["rss_idle_mb"] = round(rss_mb(coord.proc.pid), 1)
        cpu0, t0 = _cpu_s(coord.proc.pid), time.monotonic()
        asyncio.run(_submit(run_dir, total))
        t_sub = time.monotonic()
        t1, _ = asyncio.run(_status_until(run_dir, lambda s, st: s.get("running", 0) == total, 600, "all dispatched"))
        out["submit_s"] = round(t_sub - t0, 2)
        out["dispatch_s"] = round(t1 - t0, 2)
        out["dispatch_per_s"] = round(total / (t1 - t0))
        out["dispatch_cpu_s"] = round(_cpu_s(coord.proc.pid) - cpu0, 2)
        out["status_backlog_s"] = round(_settle(coord.proc.pid), 1)  # the ranks' SessionStatus, 4 a session
        out["dispatch_and_status_cpu_s"] = round(_cpu_s(coord.proc.pid) - cpu0, 2)
        out["load_hold"] = os.getloadavg()[0]
        out["rss_loaded_mb"] = round(rss_mb(coord.proc.pid), 1)
        cpu0, t0 = _cpu_s(coord.proc.pid), time.monotonic()
        time.sleep(args.hold)
        wall = time.monotonic() - t0
        cpu = _cpu_s(coord.proc.pid) - cpu0
        out["hold_s"] = round(wall, 1)
        out["hold_cpu_pct"] = round(100 * cpu / wall, 2)
        out["hold_cpu_us_per_heartbeat"] = round(1e6 * cpu / (R * wall / args.heartbeat), 1)
        out["journal_bytes"] = RunDir(run_dir).journal_path.stat().st_size
        # kill -9 with every session in flight; the restart adopts them from the ranks' Hello
        t_kill = time.monotonic()
        os.kill(coord.proc.pid, signal.SIGKILL)
        coord.proc.wait(10)
        dispatched_before = sim.ask("count")["dispatched"]
        t0 = time.monotonic()
        coord = _coord(run_dir, args)
        out["load_restart"] = os.getloadavg()[0]
        out["restart_endpoint_s"] = round(time.monotonic() - t0, 2)
        t1, _ = asyncio.run(_status_until(
            run_dir, lambda s, st: s.get("running", 0) == total and st.ranks_alive == R, 300, "all adopted"))
        out["restart_adopted_s"] = round(t1 - t0, 2)
        out["kill_to_adopted_s"] = round(t1 - t_kill, 2)
        out["rss_restarted_mb"] = round(rss_mb(coord.proc.pid), 1)
        time.sleep(min(5.0, 3 * args.heartbeat + 1.5))  # past the restarted coordinator's dispatch hold
        out["dispatched_again"] = sim.ask("count")["dispatched"] - dispatched_before
        # completion: every rank reports its sessions done and commits them
        cpu0, t0 = _cpu_s(coord.proc.pid), time.monotonic()
        sim.ask("finish")
        t1, sessions = asyncio.run(_status_until(
            run_dir, lambda s, st: s.get("committed", 0) >= total, 600, "all committed"))
        out["complete_s"] = round(t1 - t0, 2)
        out["complete_per_s"] = round(total / (t1 - t0))
        _settle(coord.proc.pid)
        out["complete_cpu_s"] = round(_cpu_s(coord.proc.pid) - cpu0, 2)
        out["complete_cpu_us_per_session"] = round(1e6 * out["complete_cpu_s"] / total, 1)
        async def final() -> Any:
            async with RunClient(run_dir) as client:
                return await client.status()
        st = asyncio.run(final())
        out["committed"] = st.sessions.get("committed", 0)
        out["duplicates"] = st.duplicates
        out["rss_end_mb"] = round(rss_mb(coord.proc.pid), 1)
        out["rss_peak_mb"] = round(rss_mb(coord.proc.pid, "VmHWM"), 1)
        out["journal_bytes_end"] = RunDir(run_dir).journal_path.stat().st_size
        out["sim_cpu_s"] = round(_cpu_s(sim.proc.pid), 1)
    finally:
        sim.stop()
        coord.stop()
    return out


def recv_compare(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """The coordinator's CPU per session with its receive loop reading one message per wake-up (before) and in
    batches (after, ``server.RECV_BATCH``), same ranks, same load, one after the other."""
    R, S = min(args.ranks, 16), args.sessions_per_rank
    total = R * S
    out: dict[str, Any] = {"ranks": R, "sessions": total}
    for name, batch in (("before", 1), ("after", None)):
        run_dir = root / f"recv-{name}"
        coord = CoordinatorProc(run_dir, recv_batch=batch, heartbeat_interval_s=args.heartbeat,
                                heartbeat_timeout_s=30.0, status_interval_s=5.0)
        sim = RankSim(HERE, run_dir, coord.address, R, S, args)
        try:
            asyncio.run(_status_until(run_dir, lambda s, st: st.ranks_alive == R, 120, "ranks registered"))
            cpu0 = _cpu_s(coord.proc.pid)
            asyncio.run(_submit(run_dir, total))
            asyncio.run(_status_until(run_dir, lambda s, st: s.get("running", 0) == total, 600, "all dispatched"))
            _settle(coord.proc.pid)
            cpu1 = _cpu_s(coord.proc.pid)
            sim.ask("finish")
            asyncio.run(_status_until(run_dir, lambda s, st: s.get("committed", 0) >= total, 600, "all committed"))
            _settle(coord.proc.pid)
            cpu2 = _cpu_s(coord.proc.pid)
        finally:
            sim.stop()
            coord.stop()
        out[f"{name}_start_us_per_session"] = round(1e6 * (cpu1 - cpu0) / total, 1)
        out[f"{name}_complete_us_per_session"] = round(1e6 * (cpu2 - cpu1) / total, 1)
    for phase in ("start", "complete"):
        out[f"{phase}_ratio"] = round(out[f"before_{phase}_us_per_session"] / out[f"after_{phase}_us_per_session"], 2)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=64)
    p.add_argument("--sessions-per-rank", type=int, default=1024)
    p.add_argument("--heartbeat", type=float, default=1.0, help="heartbeat interval of each rank (s)")
    p.add_argument("--hold", type=float, default=20.0, help="seconds of heartbeats with every session in flight")
    p.add_argument("--commit-every", type=int, default=64, help="sessions per shard (and per Committed)")
    p.add_argument("--writer-procs", type=int, default=4, help="processes the writers are spread over")
    p.add_argument("--skip", action="append", default=[], choices=["coordinator", "writers", "compare", "recv"])
    p.add_argument("--json", type=Path, default=None, help="write the figures here")
    p.add_argument("--dir", type=Path, default=None, help="work directory (default: a temp dir, removed)")
    args = p.parse_args()
    if args.ranks < 1 or args.sessions_per_rank < SAMPLES or args.sessions_per_rank % SAMPLES:
        print(f"bench_cluster: --ranks must be >= 1 and --sessions-per-rank a multiple of {SAMPLES}",
              file=sys.stderr)
        return 2
    figures: dict[str, Any] = {"cpus": os.cpu_count(), "load_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-cluster-") as tmp:
        root = Path(tmp)
        if "coordinator" not in args.skip:
            figures["coordinator"] = bench_coordinator(args, root)
            print("coordinator:", json.dumps(figures["coordinator"]), flush=True)
        if "writers" not in args.skip:
            figures["writers"] = run_writers(HERE, root / "writers", args, SAMPLES)
            print("writers:", json.dumps(figures["writers"]), flush=True)
        if "recv" not in args.skip:
            figures["recv"] = recv_compare(args, root)
            print("recv:", json.dumps(figures["recv"]), flush=True)
        if "compare" not in args.skip:
            figures["compare"] = adoption_compare(args.ranks, args.sessions_per_rank, SAMPLES)
            print("compare:", json.dumps(figures["compare"]), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        from cluster_sim import child_main

        sys.exit(child_main(sys.argv[1:]))
    sys.exit(main())
