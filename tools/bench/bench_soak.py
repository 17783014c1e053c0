"""Soak: many sessions through several gateway ranks on the local backend, load held over time.

The whole stack runs as a user runs it (``polar-hpc launch``, local backend): the coordinator, ``--ranks`` gateway
ranks (each hosting its proxy), bwrap sandboxes, the ``shell`` harness whose agent makes ``--calls`` OpenAI
chat-completions calls with ``curl`` (a conversation that grows each turn), the ``session_completed`` evaluator and
the shard writers. The engine is the FAKE one (``sim.sglang_stub.StubServer`` in its own process, answering
``/generate`` at once with ``--tokens`` tokens): a GPU-speed engine cannot run here, so the stub stands at the
process boundary where SGLang would.

Reports: sessions/min per ``--window`` seconds; every ``--interval`` s the RSS, open fds, threads and live
descendants of each component (coordinator, each gateway rank with the proxy it hosts, their local-backend
controllers, the engine stub; with ``--network none`` each sandbox's forwarder to the proxy's Unix socket is a
descendant of its rank) and, after warm-up (the first ``--warmup`` share of the sessions), the least-squares
slope of each per 1,000 sessions; then, from the shards, that every (task, sample) was committed exactly once, and
that nothing of the run is left running once it finished.

    nice -n 10 python tools/bench/bench_soak.py --sessions 2000 --ranks 4 --calls 8 --out soak.json
    python tools/bench/bench_soak.py --sessions 100 --ranks 2 --interval 1      # a minute or so
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec
from common import free_port, load_average, wait_up
from soak_figures import ProcFigures, parent_map, proc_figures, slope, windows

from polar_hpc.launch.monitor import _component_pid, _controller_pid, session_counts
from polar_hpc.store import ShardReader
from polar_hpc.util.proc import signal_tree
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.traces import TraceStatus

STUB = "engine-stub (FAKE)"
AGENT = (
    'm="{{\\"role\\": \\"user\\", \\"content\\": \\"$POLAR_INSTRUCTION\\"}}"; i=0; '
    'while [ $i -lt {calls} ]; do '
    'curl -sS --fail --max-time 60 "$OPENAI_BASE_URL/chat/completions" -H "Authorization: Bearer $OPENAI_API_KEY" '
    '-H "Content-Type: application/json" '
    '-d "{{\\"model\\": \\"$OPENAI_MODEL\\", \\"max_tokens\\": {tokens}, \\"messages\\": [$m]}}" -o reply.json '
    '|| exit 1; '
    'i=$((i+1)); m="$m, {{\\"role\\": \\"assistant\\", \\"content\\": \\"step $i\\"}}, '
    '{{\\"role\\": \\"user\\", \\"content\\": \\"go on\\"}}"; done'
)
"""The shell harness's agent: ``calls`` chat-completions calls, each turn's conversation extending the last."""

RECIPE = """name = "soak"
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
init_pool = 4
ready_buffer = 4
run_pool = 8
postrun_pool = 4
agent_timeout_s = 120
session_timeout_s = 240
drain_grace_s = 10
[runtime]
backend = "bwrap"
network = "{network}"
[agent]
harness = "shell"
command = '''{agent}'''
[evaluator]
name = "session_completed"
[tasks]
path = "tasks.jsonl"
num_samples = {samples}
[tasks.template]
instruction = "Task {{n}}: say something"
"""


# ---------------------------------------------------------------------------------------------- processes
def serve_stub(port: int, n_tokens: int) -> None:
    from polar_hpc.sim.sglang_stub import StubServer

    async def main() -> None:
        await StubServer(n_tokens=n_tokens, keep_requests=False).start("127.0.0.1", port)
        await asyncio.Event().wait()

    asyncio.run(main())


def write_inputs(folder: Path, args: argparse.Namespace, url: str) -> tuple[Path, set[str]]:
    """The recipe and its tasks file; the session keys expected."""
    n_tasks = math.ceil(args.sessions / args.samples)
    rows = [{"task_id": f"soak-{i:05d}", "n": i} for i in range(n_tasks)]
    (folder / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    recipe = folder / "soak.toml"
    recipe.write_text(RECIPE.format(url=url, tokens=args.tokens, ranks=args.ranks, samples=args.samples,
                                    network=args.network,
                                    agent=AGENT.format(calls=args.calls, tokens=args.tokens)))
    return recipe, {f"{r['task_id']}/{s}" for r in rows for s in range(args.samples)}


def component_pids(run: RunDir) -> dict[str, int]:
    """Live processes of the run by name: each component and, on the local backend, its controller."""
    jobs = run.read_jobs() if run.jobs_path.is_file() else None
    out: dict[str, int] = {}
    for job in jobs.jobs if jobs is not None else []:
        pid = _component_pid(run, job)
        if pid is not None:
            out[job.name] = pid
        ctl = _controller_pid(run, job)
        if ctl is not None:
            out[f"{job.name} controller"] = ctl
    return out


def processes_of(run_dir: Path) -> dict[int, str]:
    """Processes whose command line names the run dir (components, sandboxes bound to its session dirs), but not
    this one."""
    out: dict[int, str] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(run_dir) in cmd:
            out[int(name)] = cmd[:200]
    return out


def stop_leftovers(run: RunDir) -> list[str]:
    """SIGKILL whatever of the run is still alive, by pid; returns what was."""
    left = component_pids(run)
    for pid in left.values():
        signal_tree(pid, signal.SIGKILL)
    return sorted(left)


# ---------------------------------------------------------------------------------------------- the run
class Sample(msgspec.Struct, kw_only=True):
    t_s: float
    done: int
    committed: int
    procs: dict[str, ProcFigures]


def follow(run: RunDir, stub_pid: int, args: argparse.Namespace, t0: float) -> tuple[list[Sample], bool]:
    """Sample until the run finishes, the components are gone or ``--timeout``; (samples, finished)."""
    samples: list[Sample] = []
    last_line = 0.0
    while True:
        status = run.read_status()
        done, committed, _ = session_counts(status) if status is not None else (0, 0, 0)
        parents = parent_map()
        pids = {**component_pids(run), STUB: stub_pid}
        procs = {name: f for name, pid in pids.items() if (f := proc_figures(pid, parents)) is not None}
        now = time.monotonic() - t0
        samples.append(Sample(t_s=round(now, 2), done=done, committed=committed, procs=procs))
        if now - last_line >= 30:
            last_line = now
            rss = sum(f.rss_mb for f in procs.values())
            print(f"  {now:6.0f}s  {done}/{args.sessions} done ({committed} committed)  "
                  f"{len(procs)} processes, {rss:.0f} MB  load {load_average()}", flush=True)
        if status is not None and status.finished:
            return samples, True
        ranks = [n for n in procs if n.startswith("gateway-") and not n.endswith(" controller")]
        if now > args.timeout or (now > 30 and ("coordinator" not in procs or not ranks)):
            print(f"  stopped following at {now:.0f}s: {'timeout' if now > args.timeout else 'components gone'}; "
                  f"logs under {run.root / 'logs'}", flush=True)
            return samples, False
        time.sleep(args.interval)


def trends(samples: list[Sample], warmup: int, total: int) -> dict[str, dict[str, Any]]:
    """Per process, while the load is held (after warm-up, before the last session is done: the run's end closes
    sockets and threads): first/last/max and the least-squares slope per 1,000 sessions of RSS, fds, threads and
    descendants, and the slope over the second half of the sessions alone (a bounded buffer filling up flattens
    by then; a leak does not)."""
    names = sorted({n for s in samples for n in s.procs})
    half = total // 2
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        pts = [(s.done, s.procs[name]) for s in samples if warmup <= s.done < total and name in s.procs]
        row: dict[str, Any] = {"samples": len(pts)}
        for field in ("rss_mb", "fds", "threads", "children"):
            xs = [float(d) for d, _ in pts]
            ys = [float(getattr(f, field)) for _, f in pts]
            k = slope(xs, ys)
            late = [(x, y) for x, y in zip(xs, ys, strict=True) if x >= half]
            k2 = slope([x for x, _ in late], [y for _, y in late])
            row[field] = {"first": ys[0] if ys else None, "last": ys[-1] if ys else None,
                          "max": max(ys) if ys else None,
                          "per_1000": None if k is None else round(k * 1000, 3),
                          "per_1000_late": None if k2 is None else round(k2 * 1000, 3)}
        out[name] = row
    return out


def check_shards(run_dir: Path, expected: set[str]) -> dict[str, Any]:
    """Every expected (task, sample) in the committed shards exactly once."""
    reader = ShardReader(run_dir)
    keys: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    for _path, table, _first in reader.session_tables():
        keys.update(table.keys)
        statuses.update(TraceStatus(int(s)).name for s in table.status)
    missing = sorted(expected - set(keys))
    twice = sorted(k for k, n in keys.items() if n > 1)
    extra = sorted(set(keys) - expected)
    return {"shards": len(reader.shards), "sessions": sum(keys.values()), "expected": len(expected),
            "missing": missing[:20], "missing_count": len(missing), "duplicated": twice[:20],
            "duplicated_count": len(twice), "unexpected": extra[:20], "statuses": dict(statuses),
            "problems": reader.problems, "exactly_once": not missing and not twice and not extra}


def report(result: dict[str, Any]) -> None:
    print(f"\n## throughput (sessions/min per {result['args']['window']:.0f} s window)")
    for w in result["windows"]:
        print(f"  {w['start_s']:7.0f}–{w['end_s']:<7.0f} {w['sessions']:6d} sessions  {w['per_min']:8.1f}/min")
    print(f"  overall {result['sessions_per_min']:.1f}/min over {result['elapsed_s']:.0f} s")
    print(f"\n## per component, from {result['warmup_sessions']} sessions done (warm-up) to the last: first → last "
          "(max), slope per 1,000 sessions after warm-up / over the second half")
    for name, row in result["components"].items():
        cells = []
        for field, unit in (("rss_mb", "MB"), ("fds", "fds"), ("threads", "threads"), ("children", "children")):
            f = row[field]
            if f["first"] is None:
                cells.append(f"{field}: no sample")
                continue
            k = "?" if f["per_1000"] is None else f"{f['per_1000']:+.2f}"
            k2 = "?" if f["per_1000_late"] is None else f"{f['per_1000_late']:+.2f}"
            cells.append(f"{f['first']:.0f}→{f['last']:.0f} ({f['max']:.0f}) {unit} {k} / {k2}")
        print(f"  {name:28s} " + " | ".join(cells))
    s = result["shards"]
    print(f"\n## shards: {s['sessions']} sessions in {s['shards']} shards, {s['expected']} expected; "
          f"missing {s['missing_count']}, twice {s['duplicated_count']}, unexpected {len(s['unexpected'])}; "
          f"statuses {s['statuses']}; exactly once: {s['exactly_once']}")
    if result["left_behind"]:
        print(f"left behind after the run finished (killed): {', '.join(result['left_behind'])}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=2000)
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--calls", type=int, default=8, help="model calls per session")
    p.add_argument("--samples", type=int, default=4, help="sessions per task")
    p.add_argument("--tokens", type=int, default=16, help="tokens the stub answers each call with")
    p.add_argument("--network", choices=["shared", "none"], default="shared",
                   help="runtime.network: none gives each sandbox its own network namespace, the proxy reached "
                        "through runtime.bridge (the hand-off by default)")
    p.add_argument("--interval", type=float, default=5.0, help="seconds between process samples")
    p.add_argument("--window", type=float, default=60.0, help="seconds per throughput window")
    p.add_argument("--warmup", type=float, default=0.2, help="share of the sessions before the slopes count")
    p.add_argument("--timeout", type=float, default=3 * 3600.0)
    p.add_argument("--run-dir", type=Path, help="default: a fresh temporary folder")
    p.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = p.parse_args()
    if args.sessions % args.samples:
        p.error(f"--sessions {args.sessions} is not a multiple of --samples {args.samples}")

    folder = Path(tempfile.mkdtemp(prefix="bench-soak-"))
    run_dir = (args.run_dir or folder / "run").resolve()
    port = free_port()
    log = open(folder / "stub.log", "wb")
    stub = subprocess.Popen([sys.executable, __file__, "_stub", str(port), str(args.tokens)],
                            stdout=subprocess.DEVNULL, stderr=log)
    run = RunDir(run_dir)
    left: list[str] = []
    try:
        url = f"http://127.0.0.1:{port}"
        wait_up(url, stub)
        recipe, expected = write_inputs(folder, args, url)
        print(f"# bench_soak: {args.sessions} sessions ({args.calls} calls each), {args.ranks} gateway ranks, "
              f"local backend, bwrap (network {args.network}), shell harness + curl; engine: FAKE stub process "
              f"({args.tokens} tokens a call)")
        print(f"host: {os.cpu_count()} cores, load average {load_average()}; run dir {run_dir}", flush=True)
        t0 = time.monotonic()
        launched = subprocess.run([sys.executable, "-m", "polar_hpc", "launch", str(recipe), "--run-dir",
                                   str(run_dir)], capture_output=True, text=True, timeout=300)
        if launched.returncode:
            print(f"launch failed ({launched.returncode}): {launched.stderr[-2000:]}", file=sys.stderr)
            return 1
        samples, finished = follow(run, stub.pid, args, t0)
        elapsed = samples[-1].t_s
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (component_pids(run) or processes_of(run_dir)):
            time.sleep(1)  # a finished run's components (and their sandboxes) exit by themselves
        left = stop_leftovers(run) + [f"pid {pid}: {cmd}" for pid, cmd in processes_of(run_dir).items()]
    finally:
        stop_leftovers(run)
        for pid in processes_of(run_dir):
            signal_tree(pid, signal.SIGKILL)
        stub.terminate()
        stub.wait(timeout=30)
        log.close()
    warmup = int(args.sessions * args.warmup)
    times, done = [s.t_s for s in samples], [s.done for s in samples]
    result: dict[str, Any] = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "engine": "FAKE: polar_hpc.sim.sglang_stub.StubServer in its own process (a GPU-speed engine cannot run here)",
        "host": {"cores": os.cpu_count(), "load_average_end": load_average()},
        "finished": finished, "elapsed_s": elapsed, "sessions_done": done[-1],
        "sessions_per_min": round(done[-1] * 60 / elapsed, 2) if elapsed else 0.0,
        "warmup_sessions": warmup,
        "windows": [msgspec.to_builtins(w) for w in windows(times, done, args.window)],
        "components": trends(samples, warmup, args.sessions),
        "shards": check_shards(run_dir, expected),
        "left_behind": left,
        "samples": [msgspec.to_builtins(s) for s in samples],
    }
    report(result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
        print(f"figures: {args.out}")
    return 0 if finished and result["shards"]["exactly_once"] else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_stub":
        serve_stub(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit(main())
