"""The parts of ``bench_cluster.py`` that run in its child processes (simulated ranks, shard writers), and its
state-machine before/after comparison. FAKE ranks: they run no session; they speak the real control protocol."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any, cast

import zmq

from polar_hpc.coordinator.state import DispatchState
from polar_hpc.gateway.stages import Stage
from polar_hpc.wire import control as c
from polar_hpc.wire.security import configure_client, load_keys
from polar_hpc.wire.session import Session, Task

OPENING = (Stage.QUEUED, Stage.INIT, Stage.READY, Stage.RUN)
"""The stage changes a gateway reports while a session starts (``SessionStatus`` each); POSTRUN, DONE at its end."""


# ---------------------------------------------------------------------------------------------- ranks
class _Rank:
    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]], keys: Any, address: str, rank: int,
                 capacity: int) -> None:
        self.sock = ctx.socket(zmq.DEALER)
        self.sock.linger = 0
        configure_client(self.sock, keys)
        self.sock.connect(address)
        self.rank, self.capacity = rank, capacity
        self.held: dict[str, Session] = {}
        self.last_hello = 0.0
        self.seq = 0

    def send(self, msg: c.Msg) -> None:
        self.sock.send(c.encode(msg))

    def hello(self) -> None:
        self.last_hello = time.monotonic()
        self.send(c.Hello(protocol=c.PROTOCOL_VERSION, role="gateway", rank=self.rank, host="sim",
                          capacity=self.capacity, active=[c.SessionRef(k, s.attempt) for k, s in self.held.items()]))

    def heartbeat(self) -> None:
        n = len(self.held)
        self.send(c.Heartbeat(rank=self.rank, occupancy={"run": n}, free=self.capacity - n))

    def finish_some(self, n: int) -> int:
        """Report up to ``n`` held sessions done and commit them as one shard; how many."""
        from polar_hpc.sim.rank import fake_result

        keys = list(self.held)[:n]
        summary = c.SessionSummary(status=1, reward=1.0, accepted=True, num_traces=1, tokens=24)
        for k in keys:
            s = self.held.pop(k)
            self.send(c.SessionStatus(key=k, attempt=s.attempt, stage=Stage.POSTRUN))
            self.send(c.SessionDone(key=k, attempt=s.attempt, summary=summary, result=fake_result(s, self.rank)))
        if keys:
            self.send(c.Committed(rank=self.rank, path=f"sim/rank-{self.rank:05d}-{self.seq:06d}.h5", keys=keys))
            self.seq += 1
        return len(keys)


def sim_ranks(run_dir: str, address: str, n: int, capacity: int, heartbeat_s: float, commit_every: int) -> None:
    """Child: ``n`` ranks; commands on stdin (``count``, ``finish``, ``quit``), one JSON reply line each."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    ctx.MAX_SOCKETS = n + 64
    keys = load_keys(Path(run_dir))
    ranks = [_Rank(ctx, keys, address, i, capacity) for i in range(n)]
    by_sock = {r.sock: r for r in ranks}
    poller = zmq.Poller()
    for r in ranks:
        r.hello()
        poller.register(r.sock, zmq.POLLIN)
    poller.register(sys.stdin.fileno(), zmq.POLLIN)
    dec = c.gateway_decoder()
    dispatched = 0
    finishing = False
    slice_s, tick, start = heartbeat_s / 10, 0, time.monotonic()

    def reply(obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    while True:
        while time.monotonic() >= start + tick * slice_s:  # each rank once per interval, spread over 10 slices
            for r in ranks[tick % 10::10]:
                r.heartbeat()
            tick += 1
        if finishing:
            finishing = sum(r.finish_some(commit_every) for r in ranks) > 0
        timeout = 0 if finishing else max(0.0, start + tick * slice_s - time.monotonic()) * 1000
        for sock, _ in poller.poll(int(timeout)):
            if sock == sys.stdin.fileno():
                cmd = sys.stdin.readline().strip()
                if cmd in ("quit", ""):
                    for r in ranks:
                        r.sock.close(linger=0)
                    ctx.term()
                    return
                if cmd == "finish":
                    finishing = True
                reply({"dispatched": dispatched, "held": sum(len(r.held) for r in ranks)})
                continue
            r = by_sock[sock]
            while True:
                try:
                    msg = dec.decode(r.sock.recv(zmq.NOBLOCK))
                except zmq.Again:
                    break
                match msg:
                    case c.Dispatch():
                        for s in msg.sessions:
                            dispatched += 1
                            r.held[s.key] = s
                            for stage in OPENING:
                                r.send(c.SessionStatus(key=s.key, attempt=s.attempt, stage=stage))
                    case c.Refused(rehello=True):
                        if time.monotonic() - r.last_hello > heartbeat_s:
                            r.hello()
                    case c.Refused():
                        raise RuntimeError(f"rank {r.rank} refused: {msg.reason}")
                    case c.CancelSessions():
                        for k in msg.keys:
                            gone = r.held.get(k)
                            if gone is not None:
                                del r.held[k]
                                r.send(c.Released(key=k, attempt=gone.attempt, cause="cancelled"))


class RankSim:
    """The parent's handle on the ranks' child process."""

    def __init__(self, script: Path, run_dir: Path, address: str, n: int, capacity: int,
                 args: argparse.Namespace) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(script), "_ranks", str(run_dir), address, str(n), str(capacity), str(args.heartbeat),
             str(args.commit_every)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, cmd: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"simulated ranks exited ({self.proc.poll()})")
        return dict(json.loads(line))

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(5)


# ---------------------------------------------------------------------------------------------- writers
def writer_task(rank: int, i: int, samples: int) -> tuple[str, int]:
    return f"w{rank:03d}-{i // samples:05d}", i % samples


def sim_writers(shards: str, first: int, n: int, per_rank: int, commit_every: int, samples: int) -> None:
    """Child: ranks ``first .. first+n-1``, each a real ``ShardWriter`` into ``shards``; prints its figures."""
    from polar_hpc.config.run import ShardConfig
    from polar_hpc.sim.rank import fake_result
    from polar_hpc.store.writer import ShardWriter

    writers = [ShardWriter(shards, r, ShardConfig(max_sessions=10**9, max_age_s=1e9), producer={"bench": "cluster"})
               for r in range(first, first + n)]
    t0 = time.perf_counter()
    tasks: dict[str, Task] = {}
    for i in range(per_rank):
        for w in writers:
            tid, sample = writer_task(w.rank, i, samples)
            task = tasks.setdefault(tid, Task(task_id=tid, instruction="x", num_samples=samples))
            w.add(fake_result(Session(task=task, sample_index=sample), w.rank))
            if (i + 1) % commit_every == 0:
                w.commit(wait=False)
    for w in writers:
        w.close()
    print(json.dumps({"seconds": time.perf_counter() - t0, "shards": sum(len(w.committed) for w in writers)}))


def run_writers(script: Path, root: Path, args: argparse.Namespace, samples: int) -> dict[str, Any]:
    from polar_hpc.config import RunConfig
    from polar_hpc.coordinator.server import Coordinator
    from polar_hpc.store.resume import resume_index
    from polar_hpc.wire.rundir import RunDir

    R, S = args.ranks, args.sessions_per_rank
    shards = RunDir(root).shards
    shards.mkdir(parents=True)
    procs = max(1, min(args.writer_procs, R))
    per = [R // procs + (i < R % procs) for i in range(procs)]
    firsts = [sum(per[:i]) for i in range(procs)]
    t0 = time.monotonic()
    children = [subprocess.Popen([sys.executable, str(script), "_writers", str(shards), str(f), str(n), str(S),
                                  str(args.commit_every), str(samples)], stdout=subprocess.PIPE, text=True)
                for f, n in zip(firsts, per, strict=True)]
    outs = [json.loads(ch.communicate(timeout=900)[0]) for ch in children]
    wall = time.monotonic() - t0
    loop_s = max(o["seconds"] for o in outs)
    n_shards = sum(o["shards"] for o in outs)
    files = len(list(shards.glob("*.h5")))
    out: dict[str, Any] = {"writers": R, "processes": procs, "sessions": R * S, "shards": files,
                           "write_s": round(loop_s, 2), "wall_s": round(wall, 2),
                           "commits_per_s": round(n_shards / loop_s, 1), "sessions_per_s": round(R * S / loop_s),
                           "bytes": sum(p.stat().st_size for p in shards.glob("*.h5"))}
    t0 = time.perf_counter()
    idx = resume_index(shards)
    out["resume_index_s"] = round(time.perf_counter() - t0, 3)
    out["resume_keys"], out["resume_duplicates"] = len(idx.keys), idx.duplicates
    assert len(idx.keys) == R * S and not idx.problems, (len(idx.keys), idx.problems[:2])
    tasks = [Task(task_id=writer_task(r, i, samples)[0], instruction="x", num_samples=samples)
             for r in range(R) for i in range(0, S, samples)]
    coord = Coordinator(RunConfig(name="bench"), root, host="127.0.0.1", tasks=tasks)
    t0 = time.perf_counter()
    coord.restore()
    out["coordinator_restore_s"] = round(time.perf_counter() - t0, 3)
    assert coord.state.finished and not coord.state.pending, "restore did not find every session committed"
    return out


# ---------------------------------------------------------------------------------------------- before/after
class _DequeQueue(DispatchState):
    """BEFORE: the pending queue as it was (a deque; a key left it by ``deque.remove``, a scan)."""

    def __init__(self) -> None:
        super().__init__()
        self.pending = cast(Any, deque())

    def _remove_pending(self, key: str) -> None:
        try:
            cast(deque[str], self.pending).remove(key)
        except ValueError:
            pass


class _UnboundedHeap(DispatchState):
    """BEFORE: the dispatch heap as it was (a push per rank change, popped only by dispatch)."""

    def _rebuild_heap(self) -> None:
        pass


def _adopt(cls: type[DispatchState], R: int, S: int, samples: int) -> float:
    st = cls()
    for i in range(R * S // samples):
        st.add_task(Task(task_id=f"t{i:06d}", instruction="x", num_samples=samples))
    keys = list(st.pending)
    held = [[c.SessionRef(keys[j], 0) for j in range(r, R * S, R)] for r in range(R)]  # least-loaded order
    t0 = time.perf_counter()
    for r in range(R):
        st.register(bytes([r % 256, r // 256]), r, S, 0.0, active=held[r])
    dt = time.perf_counter() - t0
    assert not st.pending and st.counts[c.SessionState.RUNNING] == R * S
    return dt


def _heap_after_wave(cls: type[DispatchState], R: int, S: int, samples: int) -> tuple[int, float]:
    st = cls()
    for r in range(R):
        st.register(bytes([r % 256, r // 256]), r, S, 0.0)
    for i in range(R * S // samples):
        st.add_task(Task(task_id=f"t{i:06d}", instruction="x", num_samples=samples))
    t0 = time.perf_counter()
    for rank, sessions in st.dispatch().items():
        peer = st.ranks[rank].peer
        for s in sessions:
            st.done(peer, s.key, s.attempt)
        st.committed(peer, [s.key for s in sessions])
    return len(st._heap), time.perf_counter() - t0


def adoption_compare(R: int, S: int, samples: int) -> dict[str, Any]:
    after = _adopt(DispatchState, R, S, samples)
    before = _adopt(_DequeQueue, R, S, samples)
    heap_after, wave_after = _heap_after_wave(DispatchState, R, S, samples)
    heap_before, wave_before = _heap_after_wave(_UnboundedHeap, R, S, samples)
    return {"adopt_sessions": R * S, "adopt_before_s": round(before, 3), "adopt_after_s": round(after, 3),
            "adopt_ratio": round(before / after, 1), "heap_entries_before": heap_before,
            "heap_entries_after": heap_after, "wave_before_s": round(wave_before, 3),
            "wave_after_s": round(wave_after, 3)}


def child_main(argv: list[str]) -> int:
    role, rest = argv[0], argv[1:]
    if role == "_ranks":
        run_dir, address, n, capacity, hb, every = rest
        sim_ranks(run_dir, address, int(n), int(capacity), float(hb), int(every))
    elif role == "_writers":
        shards, first, n, per, every, samples = rest
        sim_writers(shards, int(first), int(n), int(per), int(every), int(samples))
    else:
        raise SystemExit(f"unknown role {role}")
    return 0
