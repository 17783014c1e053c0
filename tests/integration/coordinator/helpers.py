"""Run dirs, processes and waits for the control-plane tests (every process is stopped by its pid)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import zmq

from polar_hpc.config import RunConfig, dump_config
from polar_hpc.config.run import CoordinatorConfig, TaskSource
from polar_hpc.wire.rundir import RunDir

FAST = dict(heartbeat_interval_s=0.2, heartbeat_timeout_s=2.0, status_interval_s=0.3, max_attempts=3)


def make_config(tmp_path: Path, n_tasks: int = 0, num_samples: int = 1, **coord: object) -> RunConfig:
    path = None
    if n_tasks:
        path = tmp_path / "tasks.jsonl"
        path.write_text("".join(json.dumps({"task_id": f"t{i:03d}", "instruction": f"do {i}"}) + "\n"
                                for i in range(n_tasks)))
    return RunConfig(name="cp-test", coordinator=CoordinatorConfig(**{**FAST, **coord}),  # type: ignore[arg-type]
                     tasks=TaskSource(path=str(path) if path else None, num_samples=num_samples),
                     recipe_dir=str(tmp_path))


def write_run(tmp_path: Path, cfg: RunConfig) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    RunDir(run_dir).config_path.write_text(dump_config(cfg))
    return run_dir


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[3])
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


def spawn_coordinator(run_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "polar_hpc", "coordinator", "--config", str(RunDir(run_dir).config_path),
         "--run-dir", str(run_dir), "--host", "127.0.0.1"],
        stdout=log.open("ab"), stderr=subprocess.STDOUT, env=_env())


def spawn_rank(run_dir: Path, rank: int, log: Path, *, duration: float = 0.05, capacity: int = 2,
               commit_every: int = 3) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "polar_hpc.sim.rank", "--run-dir", str(run_dir), "--rank", str(rank),
         "--duration", str(duration), "--capacity", str(capacity), "--commit-every", str(commit_every),
         "--heartbeat", "0.2", "--timeout", "2.0"],
        stdout=log.open("ab"), stderr=subprocess.STDOUT, env=_env())


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout_s: float = 15.0) -> int:
    if proc.poll() is None:
        os.kill(proc.pid, sig)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(5)
    return proc.returncode


def shard_keys(run_dir: Path) -> tuple[list[str], int]:
    """All session keys in committed shards (with repeats) and the reader's duplicate count."""
    from polar_hpc.store.reader import ShardReader

    reader = ShardReader(RunDir(run_dir).shards)
    keys = [k for _, table, _ in reader.session_tables() for k in table.keys]
    return keys, len(reader.duplicates)


def term_with_deadline(ctx: zmq.Context, timeout_s: float = 5.0) -> None:  # type: ignore[type-arg]
    """``ctx.term()`` in a daemon thread: fail loudly instead of hanging when sockets remain open."""
    t = threading.Thread(target=ctx.term, daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        raise AssertionError(f"zmq context did not terminate within {timeout_s}s: open sockets likely remain")
