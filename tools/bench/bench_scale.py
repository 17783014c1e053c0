"""Scale: hundreds to a thousand sessions in flight on one gateway rank, as ``polar-hpc launch`` runs them.

The whole stack on the local backend: the coordinator, one gateway rank (its proxy, stage pools and shard writer),
bwrap sandboxes with ``network = "none"`` (the proxy reached through the sandbox bridge: ``--bridge forwarder``,
a Python forwarder process per sandbox, or ``handoff``, the sandbox's listening socket handed to the rank's proxy
and no process left in the sandbox besides the harness), and a light harness that holds its session like an agent
does: ``--calls`` OpenAI chat-completions calls with ``curl``, each after a pause drawn from a long-tailed
(log-normal) distribution, about ``--hold`` seconds a session in all. The engine is the FAKE one
(``sim.sglang_stub.StubServer`` in its own process, answering ``/generate`` at once): a GPU-speed engine cannot
run here, so the stub stands at the process boundary where SGLang would.

Each level is one run of that many sessions with ``run_pool`` as large, so that all of them are in flight at once
after the ramp. Per level: sessions in flight held (the rank's RUN occupancy), start latency (rank queue → the
harness's exec, from the shards' timings), per session in flight our own memory (the rank's growth plus the PSS
of bwrap and forwarders) and fds, the harness's own apart, CPU-ms per session of ours, the proxy's added latency
(its own time per call, from the completion records) and the call time the harness saw, failures by cause, and
every (task, sample) committed exactly once. ``--kill``: at the top level, SIGKILL the gateway rank once the
sessions are in flight, ``polar-hpc resume`` the run, and time the restart; every session still exactly once.

    nice -n 10 python tools/bench/bench_scale.py --levels 250,500,1000 --bridge both --json scale.json
    python tools/bench/bench_scale.py --sessions 50 --hold 20          # a minute or two
    python tools/bench/bench_scale.py --levels 1000 --kill             # kill -9 + resume at 1,000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench_soak import check_shards, component_pids, processes_of, stop_leftovers
from common import free_port, load_average, wait_up
from scale_figures import (
    ProcCost,
    call_times,
    percentile,
    proc_cost,
    record_latencies_s,
    sandbox_processes,
    think_times,
)
from soak_figures import parent_map

from polar_hpc.launch.monitor import session_counts
from polar_hpc.store import ShardReader
from polar_hpc.util.proc import signal_tree
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.traces import TraceStatus

ROOT = Path(__file__).resolve().parents[2]
AGENT = (
    'for t in $POLAR_INSTRUCTION; do sleep $t; '
    'curl -sS --fail --max-time 60 "$OPENAI_BASE_URL/chat/completions" -H "Authorization: Bearer $OPENAI_API_KEY" '
    '-H "Content-Type: application/json" -o /dev/null -w "call %{{time_total}}\\n" '
    '-d "{{\\"model\\": \\"$OPENAI_MODEL\\", \\"max_tokens\\": {tokens}, '
    '\\"messages\\": [{{\\"role\\": \\"user\\", \\"content\\": \\"think $t\\"}}]}}" || exit 1; done'
)
"""The light harness: for each pause in its instruction, sleep it, then one model call; prints ``call <s>``."""

RECIPE = """name = "scale"
[launch]
backend = "local"
[inference]
engine = "external"
endpoints = ["{url}"]
model = "asset:tiny-qwen3"
context_length = 4096
max_new_tokens = {tokens}
request_timeout_s = 60
[coordinator]
status_interval_s = 1
[gateway]
num_ranks = {ranks}
init_pool = {init_pool}
ready_buffer = {ready}
run_pool = {run_pool}
postrun_pool = {postrun}
start_gate = {start_gate}
agent_timeout_s = {agent_timeout}
session_timeout_s = {session_timeout}
drain_grace_s = 10
keep_records = true
[runtime]
backend = "bwrap"
network = "none"
bridge = "{bridge}"
[agent]
harness = "shell"
command = '''{agent}'''
[evaluator]
name = "session_completed"
[tasks]
path = "tasks.jsonl"
num_samples = 1
[tasks.template]
instruction = "{{thinks}}"
"""


def write_inputs(folder: Path, args: argparse.Namespace, n: int, ranks: int, bridge: str,
                 url: str) -> tuple[Path, set[str]]:
    rng = random.Random(args.seed + n)
    rows = [{"task_id": f"scale-{i:05d}", "thinks": " ".join(map(str, think_times(rng, args.calls, args.hold)))}
            for i in range(n)]
    (folder / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    per_rank = -(-n // ranks)
    recipe = folder / "scale.toml"
    recipe.write_text(RECIPE.format(
        url=url, tokens=args.tokens, ranks=ranks, init_pool=args.init_pool, ready=args.init_pool,
        run_pool=per_rank, postrun=args.init_pool, start_gate=args.start_gate, bridge=bridge,
        agent_timeout=args.hold * 4 + 120, session_timeout=args.hold * 4 + 240,
        agent=AGENT.format(tokens=args.tokens)))
    return recipe, {f"{r['task_id']}/0" for r in rows}


# ---------------------------------------------------------------------------------------------- sampling
class Snapshot:
    """Our processes and the harness's at one moment, below every gateway rank of the run."""

    def __init__(self, t_s: float, in_flight: int, ranks: dict[int, ProcCost], kinds: dict[str, ProcCost]) -> None:
        self.t_s = t_s
        self.in_flight = in_flight
        self.ranks = ranks
        self.kinds = kinds

    def to_json(self) -> dict[str, Any]:
        return {"t_s": self.t_s, "in_flight": self.in_flight,
                "ranks": {str(p): _cost_json(c) for p, c in self.ranks.items()},
                "kinds": {k: _cost_json(c) for k, c in self.kinds.items()}}


def _cost_json(c: ProcCost) -> dict[str, Any]:
    return {"count": c.count, "rss_mb": round(c.rss_mb, 1), "pss_mb": round(c.pss_mb, 1), "fds": c.fds,
            "cpu_s": round(c.cpu_s, 2)}


def snapshot(rank_pids: list[int], t_s: float, in_flight: int, cpu_max: dict[int, tuple[str, float]]) -> Snapshot:
    parents = parent_map()
    ranks: dict[int, ProcCost] = {}
    kinds = {k: ProcCost() for k in ("bwrap", "forwarder", "harness")}
    for rank in rank_pids:
        cost = proc_cost(rank)
        if cost is None:
            continue
        ranks[rank] = cost
        for pid, kind in sandbox_processes(rank, parents).items():
            c = proc_cost(pid)
            if c is None:
                continue
            kinds[kind].add(c)
            if kind != "harness":
                cpu_max[pid] = (kind, max(c.cpu_s, cpu_max.get(pid, (kind, 0.0))[1]))
    return Snapshot(t_s, in_flight, ranks, kinds)


def run_occupancy(run: RunDir) -> tuple[int, int, bool]:
    """(sessions in RUN over the live ranks, sessions committed, finished) from the coordinator's status file."""
    try:
        status = run.read_status()
    except Exception:  # written atomically, but a status from an older schema or a half-started run: no figure
        return 0, 0, False
    if status is None:
        return 0, 0, False
    busy = sum(r.occupancy.get("run", 0) for r in status.ranks if r.alive)
    return busy, session_counts(status)[1], bool(status.finished)


def gateway_pids(run: RunDir) -> list[int]:
    return [pid for name, pid in component_pids(run).items()
            if name.startswith("gateway-") and not name.endswith(" controller")]


# ---------------------------------------------------------------------------------------------- one level
def run_level(args: argparse.Namespace, n: int, ranks: int, bridge: str, url: str, kill: bool) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix=f"bench-scale-{bridge}-{n}-", dir=args.root))
    run_dir = folder / "run"
    recipe, expected = write_inputs(folder, args, n, ranks, bridge, url)
    run = RunDir(run_dir)
    label = f"{ranks} x {n // ranks}" if ranks > 1 else str(n)
    print(f"\n# level {label} in flight, bridge {bridge}{', kill -9 + resume' if kill else ''}: {run_dir}",
          flush=True)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    t0, wall0 = time.monotonic(), time.time()
    launched = subprocess.run([sys.executable, "-m", "polar_hpc", "launch", str(recipe), "--run-dir", str(run_dir)],
                              capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    if launched.returncode:
        return {"in_flight": 0, "error": f"launch failed ({launched.returncode}): {launched.stderr[-1500:]}"}
    snaps: list[Snapshot] = []
    cpu_max: dict[int, tuple[str, float]] = {}
    rank_cpu: dict[int, float] = {}
    held: list[tuple[float, int]] = []
    base: list[Snapshot] = []
    kill_info: dict[str, Any] = {}
    last_heavy = -1e9
    finished = False
    try:
        while True:
            now = time.monotonic() - t0
            busy, committed, finished = run_occupancy(run)
            held.append((round(now, 2), busy))
            pids = gateway_pids(run)
            for pid in pids:
                if (c := proc_cost(pid, memory=False)) is not None:
                    rank_cpu[pid] = max(rank_cpu.get(pid, 0.0), c.cpu_s)
            every = args.sample_every if base else 1.0
            sampled_peak = max((x.in_flight for x in snaps), default=0)
            if pids and (now - last_heavy >= every or (busy >= 0.9 * n and busy > sampled_peak
                                                       and now - last_heavy >= 3)):
                snaps.append(snapshot(pids, round(now, 2), busy, cpu_max))
                if not base and snaps[-1].kinds["bwrap"].count:
                    # the rank as last seen without a sandbox (loaded: sessions come once it registered), else
                    # with its first few: its growth from there is what its sessions cost
                    bare = [x for x in snaps[:-1] if x.ranks and not x.kinds["bwrap"].count]
                    base.append(bare[-1] if bare else snaps[-1])
                last_heavy = time.monotonic() - t0
                s = snaps[-1]
                print(f"  {now:6.0f}s  in RUN {busy}/{n}  ours: rank {sum(c.rss_mb for c in s.ranks.values()):.0f} MB"
                      f" {sum(c.fds for c in s.ranks.values())} fds, {s.kinds['bwrap'].count} bwrap "
                      f"{s.kinds['bwrap'].pss_mb:.0f} MB PSS, {s.kinds['forwarder'].count} forwarders "
                      f"{s.kinds['forwarder'].pss_mb:.0f} MB PSS; harness {s.kinds['harness'].count} procs "
                      f"{s.kinds['harness'].pss_mb:.0f} MB PSS  load {load_average()}", flush=True)
            if kill and not kill_info and pids and (committed >= args.kill_after if args.kill_after
                                                    else busy >= 0.9 * n):
                coordinator = component_pids(run).get("coordinator") if args.kill_coordinator else None
                kill_info = kill_and_resume(run, run_dir, pids, busy, env, t0, coordinator)
            if kill_info and "in_flight_again_s" not in kill_info:
                restart_progress(kill_info, [p for p in pids if p not in kill_info["killed"]], t0)
            if finished:
                break
            if now > args.timeout:
                print(f"  stopped following at {now:.0f}s: timeout; logs under {run_dir / 'logs'}", flush=True)
                break
            time.sleep(1.0)
        elapsed = time.monotonic() - t0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (component_pids(run) or processes_of(run_dir)):
            time.sleep(1)
        left = stop_leftovers(run)
    finally:
        stop_leftovers(run)
        for pid in processes_of(run_dir):
            signal_tree(pid, signal.SIGKILL)
    row = figures(run_dir, expected, n, held, snaps, base, rank_cpu, cpu_max, wall0)
    row.update({"level": label, "bridge": bridge, "ranks": ranks, "finished": finished, "elapsed_s": round(elapsed, 1),
                "left_behind": left, "run_dir": str(run_dir)})
    if kill_info:
        kill_info.pop("killed", None)
        kill_info["coordinator_restored"] = restored_lines(run_dir)
        row["kill"] = kill_info
    return row


def kill_and_resume(run: RunDir, run_dir: Path, pids: list[int], busy: int, env: dict[str, str],
                    t0: float, coordinator: int | None = None) -> dict[str, Any]:
    """SIGKILL every gateway rank (its sandboxes die with it: ``--die-with-parent``) and, when given, the
    coordinator (it rebuilds its state from the shards and its journal), then ``polar-hpc resume``."""
    at = time.monotonic() - t0
    for pid in [*pids, *([coordinator] if coordinator else [])]:
        os.kill(pid, signal.SIGKILL)
    also = " and the coordinator" if coordinator else ""
    print(f"  {at:6.0f}s  kill -9 gateway rank(s) {pids}{also} with {busy} sessions in RUN", flush=True)
    r0 = time.monotonic()
    while True:  # until the launcher sees the components gone (its local controllers notice within seconds)
        resumed = subprocess.run([sys.executable, "-m", "polar_hpc", "resume", str(run_dir)], capture_output=True,
                                 text=True, timeout=300, env=env, cwd=ROOT)
        if resumed.returncode or "nothing submitted" not in resumed.stdout or time.monotonic() - r0 > 120:
            break
        time.sleep(2.0)
    took = time.monotonic() - r0
    print(f"  resume exited {resumed.returncode} after {took:.1f}s: {resumed.stdout.strip()[-300:]}"
          f"{resumed.stderr.strip()[-300:]}", flush=True)
    return {"killed": pids, "at_s": round(at, 2), "in_run_at_kill": busy, "resume_rc": resumed.returncode,
            "resume_s": round(took, 2)}


def restored_lines(run_dir: Path) -> list[str]:
    """What each coordinator life said of its resume index (sessions restored from the shards, how long)."""
    out = []
    for path in sorted((run_dir / "logs" / "coordinator").glob("*/*.out")):
        out += [line.split("INFO ", 1)[-1].strip() for line in path.read_text(errors="replace").splitlines()
                if "restored" in line and "committed sessions" in line]
    return out


def restart_progress(info: dict[str, Any], new_ranks: list[int], t0: float) -> None:
    """After the kill: when the new rank process appeared, when it had its first sandbox, and when 90% of the
    sessions in RUN at the kill had a sandbox again (from the process table: the coordinator's status still shows
    the dead rank's occupancy until it misses its heartbeats)."""
    if not new_ranks:
        return
    since = round(time.monotonic() - t0 - info["at_s"], 2)
    info.setdefault("rank_process_s", since)
    parents = parent_map()
    sandboxes = sum(1 for r in new_ranks for kind in sandbox_processes(r, parents).values() if kind == "bwrap") // 2
    if sandboxes and "first_sandbox_s" not in info:
        info["first_sandbox_s"] = since
    if sandboxes >= 0.9 * info["in_run_at_kill"]:
        info["in_flight_again_s"] = since
        print(f"  restart: new rank process after {info['rank_process_s']:.1f}s, first sandbox after "
              f"{info.get('first_sandbox_s', since):.1f}s, {sandboxes} sandboxes (90% of those killed) after "
              f"{since:.1f}s", flush=True)


def figures(run_dir: Path, expected: set[str], n: int, held: list[tuple[float, int]], snaps: list[Snapshot],
            base: list[Snapshot], rank_cpu: dict[int, float],
            cpu_max: dict[int, tuple[str, float]], wall0: float) -> dict[str, Any]:
    shards = check_shards(run_dir, expected)
    starts: list[float] = []
    calls: list[float] = []
    failures: Counter[str] = Counter()
    for res in ShardReader(run_dir).results():
        t = res.timings
        starts.append(t.get("queue", 0.0) + t.get("init", 0.0) + t.get("ready_wait", 0.0))
        calls += call_times(res.notes.harness_log_tail or "")
        status = TraceStatus(int(res.trajectory.status)).name
        if status != "COMPLETED":
            detail = res.trajectory.error or (res.agent.detail if res.agent is not None else "")
            failures[f"{status}: {str(detail).strip().splitlines()[-1][:80] if detail else '?'}"] += 1
    added: list[float] = []
    engine: list[float] = []
    at_level: list[float] = []  # the proxy's own time of calls received while 90% of the level was in RUN
    full = [t for t, b in held if b >= 0.9 * n]
    window = (wall0 + full[0], wall0 + full[-1]) if full else (0.0, -1.0)
    records = RunDir(run_dir).records
    for path in records.glob("*.jsonl") if records.is_dir() else []:
        for received, own, eng in record_latencies_s(path.read_bytes()):
            added.append(own)
            engine.append(eng)
            if window[0] <= received <= window[1]:
                at_level.append(own)
    peak = max((s for s in snaps), key=lambda s: (s.kinds["bwrap"].count, s.t_s), default=None)
    held_max = max((b for _, b in held), default=0)
    ours: dict[str, Any] = {}
    first = base[0] if base else None
    if peak is not None and first is not None and peak.kinds["bwrap"].count > first.kinds["bwrap"].count:
        sandboxes = peak.kinds["bwrap"].count / 2  # the outer bwrap and the sandbox's pid 1
        new = sandboxes - first.kinds["bwrap"].count / 2
        rank_growth = sum(c.rss_mb - first.ranks[p].rss_mb for p, c in peak.ranks.items() if p in first.ranks)
        rank_fds = sum(c.fds - first.ranks[p].fds for p, c in peak.ranks.items() if p in first.ranks)
        per_rank_growth = rank_growth / new
        side = peak.kinds["bwrap"].pss_mb + peak.kinds["forwarder"].pss_mb
        ours = {
            "sandboxes_sampled": int(sandboxes),
            "rank_rss_mb": round(sum(c.rss_mb for c in peak.ranks.values()), 1),
            "rank_growth_mb_per_session": round(per_rank_growth, 3),
            "bwrap_pss_mb_per_session": round(peak.kinds["bwrap"].pss_mb / sandboxes, 3),
            "forwarder_pss_mb_per_session": round(peak.kinds["forwarder"].pss_mb / sandboxes, 3),
            "sandbox_rss_mb_per_session": round((peak.kinds["bwrap"].rss_mb + peak.kinds["forwarder"].rss_mb)
                                                / sandboxes, 3),
            "our_fds_per_session": round(rank_fds / new + (peak.kinds["bwrap"].fds + peak.kinds["forwarder"].fds)
                                         / sandboxes, 2),
            "harness_pss_mb_per_session": round(peak.kinds["harness"].pss_mb / sandboxes, 3),
            "harness_procs_per_session": round(peak.kinds["harness"].count / sandboxes, 2),
            "our_procs_per_session": round((peak.kinds["bwrap"].count + peak.kinds["forwarder"].count) / sandboxes,
                                           2),
            "our_rss_mb_per_session": round(per_rank_growth + side / sandboxes, 3),
        }
    rank_start = sum(c.cpu_s for c in first.ranks.values()) if first is not None else 0.0
    ours_cpu = sum(rank_cpu.values()) - rank_start + sum(c for _, c in cpu_max.values())
    ms = lambda x: None if x is None else round(x * 1000, 2)  # noqa: E731
    return {
        "in_flight": held_max,
        "held_s_at_90pct": round(sum(t1 - t0 for (t0, b), (t1, _) in zip(held, held[1:], strict=False)
                                     if b >= 0.9 * n), 1),
        "start_p50_s": None if (p := percentile(starts, 50)) is None else round(p, 3),
        "start_p99_s": None if (p := percentile(starts, 99)) is None else round(p, 3),
        **ours,
        "our_cpu_ms_per_session": round(ours_cpu * 1000 / max(1, shards["sessions"]), 1),
        "proxy_p50_ms": ms(percentile(added, 50)), "proxy_p99_ms": ms(percentile(added, 99)),
        "proxy_p99_ms_held": ms(percentile(at_level, 99)), "calls_held": len(at_level),
        "engine_p99_ms": ms(percentile(engine, 99)),
        "call_p50_ms": ms(percentile(calls, 50)), "call_p99_ms": ms(percentile(calls, 99)),
        "calls": len(added),
        "committed": shards["sessions"], "expected": n, "duplicates": shards["duplicated_count"],
        "missing": shards["missing_count"], "exactly_once": shards["exactly_once"],
        "statuses": shards["statuses"], "failures": dict(failures),
        "snapshots": [s.to_json() for s in snaps],
        "held": held,
    }


# ---------------------------------------------------------------------------------------------- report
COLUMNS = (("level", "level", "{}"), ("bridge", "bridge", "{}"), ("in_flight", "held", "{}"),
           ("start_p50_s", "start p50 s", "{:.2f}"), ("start_p99_s", "p99 s", "{:.2f}"),
           ("our_rss_mb_per_session", "ours MB/sess", "{:.2f}"), ("rank_growth_mb_per_session", "rank", "{:.2f}"),
           ("bwrap_pss_mb_per_session", "bwrap", "{:.2f}"), ("forwarder_pss_mb_per_session", "fwd", "{:.2f}"),
           ("our_fds_per_session", "fds/sess", "{:.1f}"), ("harness_pss_mb_per_session", "harness MB", "{:.2f}"),
           ("our_cpu_ms_per_session", "CPU ms/sess", "{:.0f}"), ("proxy_p50_ms", "proxy p50 ms", "{:.1f}"),
           ("proxy_p99_ms", "p99 ms", "{:.1f}"),
           ("proxy_p99_ms_held", "p99 held", "{:.1f}"), ("engine_p99_ms", "engine p99", "{:.0f}"),
           ("call_p99_ms", "call p99 ms", "{:.0f}"),
           ("committed", "committed", "{}"), ("duplicates", "dup", "{}"))


def cell(row: dict[str, Any], key: str, fmt: str) -> str:
    v = row.get(key)
    return "-" if v is None else fmt.format(v)


def report(rows: list[dict[str, Any]]) -> None:
    print("\n## per level (ours = the rank's growth per session added + PSS of bwrap and forwarders per sandbox in "
          "flight, at the snapshot with the most sandboxes; CPU: the rank's after start-up + bwrap and forwarders')")
    print(" | ".join(h for _, h, _ in COLUMNS))
    for row in rows:
        print(" | ".join(cell(row, k, f) for k, _, f in COLUMNS))
    for row in rows:
        extra = f"  failures {row['failures']}" if row.get("failures") else ""
        if row.get("error"):
            extra += f"  error: {row['error']}"
        if row.get("kill"):
            extra += f"  kill: {row['kill']}"
        print(f"  {row.get('level')} {row.get('bridge')}: exactly once {row.get('exactly_once')}, statuses "
              f"{row.get('statuses')}{extra}")
    by = {(r.get("level"), r.get("bridge")): r for r in rows if not r.get("kill")}
    for (level, bridge), r in by.items():
        old = by.get((level, "forwarder"))
        if bridge == "handoff" and old and r.get("our_rss_mb_per_session") and old.get("our_rss_mb_per_session"):
            mem = old["our_rss_mb_per_session"] / r["our_rss_mb_per_session"]
            cpu = old["our_cpu_ms_per_session"] / max(1e-9, r["our_cpu_ms_per_session"])
            print(f"  ratio forwarder/handoff at {level}: ours {mem:.1f}x memory, CPU {cpu:.2f}x, procs "
                  f"{old.get('our_procs_per_session')} → {r.get('our_procs_per_session')} a session")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=1000, help="the top level; levels: a quarter, a half, all of it")
    p.add_argument("--levels", help="comma-separated levels instead (e.g. 250,500,1000; 2x500: two ranks)")
    p.add_argument("--bridge", choices=["forwarder", "handoff", "both"], default="handoff",
                   help="runtime.bridge; both: each level with each, forwarder first (the before/after ratio)")
    p.add_argument("--kill", action="store_true", help="at the top level: kill -9 the rank in flight, then resume")
    p.add_argument("--kill-only", action="store_true", help="--kill at the top level, without the levels before")
    p.add_argument("--kill-coordinator", action="store_true", help="--kill: the coordinator too")
    p.add_argument("--kill-after", type=int, default=0,
                   help="--kill once this many sessions are committed (default: once 90%% are in RUN)")
    p.add_argument("--calls", type=int, default=6, help="model calls per session")
    p.add_argument("--hold", type=float, default=90.0, help="seconds of think time per session, in all")
    p.add_argument("--tokens", type=int, default=8, help="tokens the stub answers each call with")
    p.add_argument("--init-pool", type=int, default=16, help="init_pool, ready_buffer and postrun_pool")
    p.add_argument("--start-gate", type=int, default=4)
    p.add_argument("--sample-every", type=float, default=10.0, help="seconds between /proc snapshots")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds a level may take")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--root", type=Path, default=None, help="where the runs go (default: a temporary folder)")
    p.add_argument("--json", type=Path, help="write the table here (one object a level)")
    args = p.parse_args()
    try:
        levels = [(int(a) * int(b), int(a)) if "x" in lv else (int(lv), 1)
                  for lv in (args.levels.split(",") if args.levels else [])
                  for a, _, b in [lv.partition("x")]] or \
            [(max(1, args.sessions // 4), 1), (max(1, args.sessions // 2), 1), (args.sessions, 1)]
    except ValueError:
        print(f"bench_scale: --levels: expected N or RANKSxN items, got {args.levels!r}", file=sys.stderr)
        return 2
    if args.calls < 1 or args.hold <= 0 or any(n < 1 for n, _ in levels):
        print("bench_scale: --calls, --hold and the levels must be positive", file=sys.stderr)
        return 2
    levels = list(dict.fromkeys(levels))
    bridges = ["forwarder", "handoff"] if args.bridge == "both" else [args.bridge]
    args.root = args.root or Path(tempfile.mkdtemp(prefix="bench-scale-"))
    args.root.mkdir(parents=True, exist_ok=True)
    port = free_port()
    stub_log = open(args.root / "stub.log", "wb")
    stub = subprocess.Popen([sys.executable, str(Path(__file__).with_name("bench_soak.py")), "_stub", str(port),
                             str(args.tokens)], stdout=subprocess.DEVNULL, stderr=stub_log)
    rows: list[dict[str, Any]] = []
    try:
        url = f"http://127.0.0.1:{port}"
        wait_up(url, stub)
        print(f"# bench_scale: levels {[f'{r}x{n // r}' if r > 1 else n for n, r in levels]}, bridge {bridges}, "
              f"{args.calls} calls a session over ~{args.hold:.0f}s of log-normal think time; shell harness + curl "
              f"in bwrap (network none); engine: FAKE stub process")
        print(f"host: {os.cpu_count()} cores, load average {load_average()}; runs under {args.root}", flush=True)
        for n, ranks in levels if not args.kill_only else []:
            for bridge in bridges:
                rows.append(run_level(args, n, ranks, bridge, url, kill=False))
                if args.json:
                    args.json.write_text(json.dumps(rows, indent=1))
        if args.kill or args.kill_only:
            n, ranks = levels[-1]
            rows.append(run_level(args, n, ranks, bridges[-1], url, kill=True))
    finally:
        stub.terminate()
        stub.wait(timeout=30)
        stub_log.close()
    report(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
        print(f"figures: {args.json}")
    return 0 if all(r.get("exactly_once") and r.get("finished") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
