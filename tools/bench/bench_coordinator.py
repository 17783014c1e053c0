"""Coordinator benchmarks (real coordinator process, real CURVE sockets over loopback).

    python tools/bench/bench_coordinator.py [dispatch|heartbeats|latency|restart|all] [--quick]

dispatch    sessions/s through the coordinator with simulated instant ranks (target >= 20,000/s)
heartbeats  coordinator CPU with 1,000 simulated ranks heartbeating at 1 Hz (target <= 10% of a core)
latency     rank "session done" -> subscribed trainer receives the result: p50 / p99
restart     coordinator state rebuilt from 1,000 shards / 1M sessions (target <= 10 s)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import zmq

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from polar_hpc.config import RunConfig, dump_config  # noqa: E402
from polar_hpc.config.run import CoordinatorConfig  # noqa: E402
from polar_hpc.wire import control as c  # noqa: E402
from polar_hpc.wire.rundir import RunDir  # noqa: E402
from polar_hpc.wire.security import configure_client, ensure_keys, load_keys  # noqa: E402


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CoordinatorProc:
    def __init__(self, run_dir: Path, *, recv_batch: int | None = None, **coord: object) -> None:
        """``recv_batch``: run it with ``server.RECV_BATCH`` set to this (a before/after comparison)."""
        run_dir.mkdir(parents=True, exist_ok=True)
        cfg = RunConfig(name="bench", coordinator=CoordinatorConfig(**coord))  # type: ignore[arg-type]
        RunDir(run_dir).config_path.write_text(dump_config(cfg))
        ensure_keys(run_dir)
        self.run_dir = run_dir
        env = {**os.environ, "PYTHONPATH": str(ROOT), "POLAR_LOG_LEVEL": "WARNING"}
        entry = [sys.executable, "-m", "polar_hpc"] if recv_batch is None else [
            sys.executable, "-c", f"import sys; from polar_hpc.coordinator import server; server.RECV_BATCH = "
                                  f"{recv_batch}; from polar_hpc.cli.entry import main; sys.exit(main(sys.argv[1:]))"]
        self.proc = subprocess.Popen(
            [*entry, "coordinator", "--config", str(RunDir(run_dir).config_path),
             "--run-dir", str(run_dir), "--host", "127.0.0.1", "--serve"], env=env)
        from polar_hpc.wire.endpoints import read_endpoint

        deadline = time.monotonic() + 30
        while (ep := read_endpoint(run_dir, "coordinator")) is None or ep.pid != self.proc.pid:  # not a previous one
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("coordinator did not start")
            time.sleep(0.05)
        self.address = ep.url

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def _dealer(ctx: zmq.Context[zmq.Socket[bytes]], run_dir: Path, address: str) -> zmq.Socket[bytes]:
    s: zmq.Socket[bytes] = ctx.socket(zmq.DEALER)
    s.linger = 0
    configure_client(s, load_keys(run_dir))
    s.connect(address)
    return s


def _hello(rank: int, capacity: int) -> bytes:
    return c.encode(c.Hello(protocol=c.PROTOCOL_VERSION, role="gateway", rank=rank, host="bench",
                            capacity=capacity))


def instant_ranks(run_dir: str, address: str, n: int, capacity: int, stamp: bool, seconds: float) -> None:
    """Child process: ``n`` ranks answering every Dispatch at once with SessionDone, then Committed."""
    from polar_hpc.sim.rank import fake_result

    ctx = zmq.Context()
    socks = [_dealer(ctx, Path(run_dir), address) for _ in range(n)]
    poller = zmq.Poller()
    for i, s in enumerate(socks):
        s.send(_hello(i, capacity))
        poller.register(s, zmq.POLLIN)
    dec = c.gateway_decoder()
    summary = c.SessionSummary(reward=1.0, accepted=True)
    end = time.monotonic() + seconds
    last_beat = 0.0
    while time.monotonic() < end:
        if time.monotonic() - last_beat > 0.5:
            last_beat = time.monotonic()
            for i, s in enumerate(socks):
                s.send(c.encode(c.Heartbeat(rank=i)))
        for s, _ in poller.poll(100):
            while True:
                try:
                    msg = dec.decode(s.recv(zmq.NOBLOCK))
                except zmq.Again:
                    break
                if not isinstance(msg, c.Dispatch):
                    continue
                keys = []
                for sess in msg.sessions:
                    result = None
                    if stamp:
                        result = fake_result(sess, 0, tokens=64)
                        result.metadata["t_done"] = time.time()
                    s.send(c.encode(c.SessionDone(key=sess.key, attempt=sess.attempt, summary=summary,
                                                  result=result)))
                    keys.append(sess.key)
                s.send(c.encode(c.Committed(rank=0, path="bench", keys=keys)))
    for s in socks:
        s.close(linger=0)
    ctx.term()


def _spawn_ranks(run_dir: Path, address: str, n: int, capacity: int, stamp: bool, seconds: float
                 ) -> subprocess.Popen[bytes]:
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(Path(__file__).parent)!r});"
            f"import bench_coordinator as b; b.instant_ranks({str(run_dir)!r}, {address!r}, {n}, {capacity}, "
            f"{stamp}, {seconds})")
    return subprocess.Popen([sys.executable, "-c", code])


async def _wait_committed(run_dir: Path, n: int, timeout_s: float) -> float:
    from polar_hpc.coordinator.client import RunClient

    async with RunClient(run_dir) as client:
        deadline = time.monotonic() + timeout_s
        while True:
            st = await client.status()
            if st.sessions.get("committed", 0) >= n:
                return time.monotonic()
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {st.sessions} after {timeout_s}s")
            await asyncio.sleep(0.05)


async def _submit(run_dir: Path, n_tasks: int, samples: int) -> None:
    from polar_hpc.coordinator.client import RunClient
    from polar_hpc.wire.session import Task

    async with RunClient(run_dir) as client:
        batch = [Task(task_id=f"t{i}", instruction="x", num_samples=samples) for i in range(n_tasks)]
        for i in range(0, len(batch), 1000):
            await client.submit(batch[i:i + 1000])


def bench_dispatch(quick: bool) -> None:
    n_tasks, samples = (200, 100) if quick else (1000, 100)
    total = n_tasks * samples
    with tempfile.TemporaryDirectory() as d:
        run_dir = Path(d)
        coord = CoordinatorProc(run_dir, heartbeat_interval_s=1.0, heartbeat_timeout_s=30.0, status_interval_s=5.0)
        ranks = _spawn_ranks(run_dir, coord.address, 8, 64, False, 120)
        try:
            time.sleep(1.0)
            cpu0 = _cpu_s(coord.proc.pid)
            t0 = time.monotonic()
            asyncio.run(_submit(run_dir, n_tasks, samples))
            t1 = asyncio.run(_wait_committed(run_dir, total, 120))
            cpu = _cpu_s(coord.proc.pid) - cpu0
        finally:
            ranks.kill()
            ranks.wait(5)
            coord.stop()
    rate = total / (t1 - t0)
    print(f"dispatch: {total} sessions through 8 instant ranks (capacity 64) in {t1 - t0:.2f}s = "
          f"{rate:,.0f} sessions/s (target 20,000; ratio {rate / 20000:.2f}); coordinator CPU {cpu:.1f}s")
    _state_only(total)


def _state_only(total: int) -> None:
    from polar_hpc.coordinator.state import DispatchState
    from polar_hpc.wire.session import Task

    st = DispatchState()
    for i in range(total // 100):
        st.add_task(Task(task_id=f"t{i}", instruction="x", num_samples=100))
    for r in range(8):
        st.register(bytes([r]), r, 64, 0.0)
    t0 = time.perf_counter()
    n = 0
    while st.pending:
        for rank, sessions in st.dispatch().items():
            peer = bytes([rank])
            for s in sessions:
                st.done(peer, s.key, s.attempt)
            st.committed(peer, [s.key for s in sessions])
            n += len(sessions)
    dt = time.perf_counter() - t0
    print(f"dispatch (state machine only, no sockets): {n / dt:,.0f} sessions/s")


def loadgen_heartbeats(run_dir: str, address: str, n: int, seconds: float) -> None:
    ctx = zmq.Context()
    ctx.MAX_SOCKETS = n + 64
    socks = [_dealer(ctx, Path(run_dir), address) for _ in range(n)]
    for i, s in enumerate(socks):
        s.send(_hello(i, 4))
    beats = [c.encode(c.Heartbeat(rank=i, occupancy={"init": 1, "ready": 1, "run": 2}, free=0))
             for i in range(n)]
    start = time.monotonic()
    tick = 0
    while time.monotonic() - start < seconds:
        # spread each second's 1,000 heartbeats over 10 slices
        for i in range(tick % 10, n, 10):
            socks[i].send(beats[i])
            try:
                while True:
                    socks[i].recv(zmq.NOBLOCK)
            except zmq.Again:
                pass
        tick += 1
        time.sleep(max(0.0, start + tick * 0.1 - time.monotonic()))
    for s in socks:
        s.close(linger=0)
    ctx.term()


def bench_heartbeats(quick: bool) -> None:
    n, seconds = 1000, (10.0 if quick else 20.0)
    with tempfile.TemporaryDirectory() as d:
        run_dir = Path(d)
        coord = CoordinatorProc(run_dir, heartbeat_interval_s=1.0, heartbeat_timeout_s=30.0, status_interval_s=5.0)
        code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); sys.path.insert(0, {str(Path(__file__).parent)!r});"
                f"import bench_coordinator as b; b.loadgen_heartbeats({str(run_dir)!r}, {coord.address!r}, {n}, "
                f"{seconds + 8})")
        gen = subprocess.Popen([sys.executable, "-c", code])
        try:
            time.sleep(6.0)  # connections, CURVE handshakes, registrations
            cpu0, t0 = _cpu_s(coord.proc.pid), time.monotonic()
            time.sleep(seconds)
            cpu = _cpu_s(coord.proc.pid) - cpu0
            wall = time.monotonic() - t0
            status = RunDir(run_dir).read_status()
            alive = status.ranks_alive if status is not None else 0
        finally:
            gen.kill()
            gen.wait(5)
            coord.stop()
    share = cpu / wall
    print(f"heartbeats: {alive} ranks alive at 1 Hz for {wall:.0f}s: coordinator CPU {100 * share:.1f}% of a core "
          f"(target 10%; ratio {share / 0.10:.2f})")


async def _latency(run_dir: Path, n: int) -> list[float]:
    from polar_hpc.coordinator.client import RunClient

    lat: list[float] = []
    async with RunClient(run_dir, credits=256) as client:
        stream = client.results()
        first = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0.5)
        await _submit(run_dir, n // 10, 10)
        r = await first
        lat.append(time.time() - r.metadata["t_done"])
        async for r in stream:
            lat.append(time.time() - r.metadata["t_done"])
            if len(lat) >= n:
                break
        await stream.aclose()
    return lat


def bench_latency(quick: bool) -> None:
    n = 2000 if quick else 10000
    with tempfile.TemporaryDirectory() as d:
        run_dir = Path(d)
        coord = CoordinatorProc(run_dir, heartbeat_interval_s=1.0, heartbeat_timeout_s=30.0, result_buffer=4096)
        ranks = _spawn_ranks(run_dir, coord.address, 4, 2, True, 120)
        try:
            time.sleep(1.0)
            lat = sorted(asyncio.run(_latency(run_dir, n)))
        finally:
            ranks.kill()
            ranks.wait(5)
            coord.stop()
    p50, p99 = lat[len(lat) // 2], lat[int(len(lat) * 0.99)]
    print(f"latency done->subscriber over {len(lat)} results (64-token traces, 4 ranks x capacity 2): "
          f"p50 {p50 * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms")


def _make_shards(shards: Path, n_shards: int, per_shard: int) -> None:
    from polar_hpc.config.run import ShardConfig
    from polar_hpc.sim.rank import fake_result
    from polar_hpc.store.writer import ShardWriter
    from polar_hpc.wire.session import Session, Task

    if shards.exists() and len(list(shards.glob("*.h5"))) == n_shards:
        return
    w = ShardWriter(shards, 0, ShardConfig(max_sessions=10**9, max_age_s=1e9), producer={"bench": "restart"})
    for i in range(n_shards):
        task = Task(task_id=f"t{i}", instruction="x")
        for j in range(per_shard):
            w.add(fake_result(Session(task=task, sample_index=j), 0, tokens=4))
        w.commit()


def bench_restart(quick: bool, cache: Path | None) -> None:
    from polar_hpc.coordinator.server import Coordinator
    from polar_hpc.wire.session import Task

    n_shards, per = (100, 1000) if quick else (1000, 1000)
    base = cache or Path(tempfile.mkdtemp())
    t0 = time.perf_counter()
    _make_shards(RunDir(base).shards, n_shards, per)
    print(f"restart: synthetic shards ready in {time.perf_counter() - t0:.1f}s ({RunDir(base).shards})")
    tasks = [Task(task_id=f"t{i}", instruction="x", num_samples=per) for i in range(n_shards)]
    coord = Coordinator(RunConfig(name="bench"), base, host="127.0.0.1", tasks=tasks)
    t0 = time.perf_counter()
    coord.restore()
    dt = time.perf_counter() - t0
    st = coord.state
    assert st.finished and len(st.pending) == 0, "restore did not mark every session committed"
    print(f"restart: {len(st.sessions):,} sessions from {n_shards} shards rebuilt in {dt:.2f}s "
          f"(target 10 s; ratio {dt / 10:.2f})")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("which", nargs="?", default="all", choices=["dispatch", "heartbeats", "latency", "restart", "all"])
    p.add_argument("--quick", action="store_true", help="smaller sizes")
    p.add_argument("--cache", type=Path, default=None, help="keep the synthetic restart shards here")
    args = p.parse_args()
    if args.which in ("dispatch", "all"):
        bench_dispatch(args.quick)
    if args.which in ("heartbeats", "all"):
        bench_heartbeats(args.quick)
    if args.which in ("latency", "all"):
        bench_latency(args.quick)
    if args.which in ("restart", "all"):
        bench_restart(args.quick, args.cache)


if __name__ == "__main__":
    main()
