"""Launcher overheads: CLI start-up, --dry-run, launch -> every component ready (local and Slurm), demo throughput.

    python tools/bench/bench_launch.py [--repeats 5] [--slurm] [--demo]

`--help` and `--dry-run` are timed beside `python -c pass` (the interpreter's own start-up) in the same run.
"Ready" means: the inference endpoint and the coordinator endpoint are published and every gateway rank has
registered (status.json's ranks_alive). `--slurm` needs SLURM_CONF (bash .ci/slurm.sh up). `--demo` runs
recipes/local-demo.toml to the end and reports its wall time and sessions per minute.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from polar_hpc.wire.endpoints import endpoint_path
from polar_hpc.wire.rundir import RunDir

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


def timed(cmd: list[str], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, capture_output=True, check=True)
        out.append(time.perf_counter() - t0)
    return out


def ready_time(backend: str, run_dir: Path, ranks: int) -> float:
    sets = ["--set", f"gateway.num_ranks={ranks}", "--set", "tasks.num_samples=50"]
    if backend == "slurm":
        sets += ["--set", "inference.resources.gpus_per_node=0", "--set", "inference.resources.cpus_per_task=1",
                 "--set", "gateway.resources.cpus_per_task=1", "--set", "coordinator.resources.cpus_per_task=1"]
    t0 = time.perf_counter()
    subprocess.run([PY, "-m", "polar_hpc", "launch", "recipes/local-shell.toml", "--backend", backend,
                    "--run-dir", str(run_dir), *sets], cwd=ROOT, capture_output=True, check=True)
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline:
            if endpoint_path(run_dir, "inference-0").exists() and endpoint_path(run_dir, "coordinator").exists():
                status = RunDir(run_dir).read_status()
                if status is not None and status.ranks_alive >= ranks:
                    return time.perf_counter() - t0
            time.sleep(0.05)
        raise TimeoutError(f"{backend}: components not ready after 600 s ({run_dir})")
    finally:
        subprocess.run([PY, "-m", "polar_hpc", "cancel", str(run_dir), "--grace", "20"], cwd=ROOT,
                       capture_output=True, timeout=180)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--slurm", action="store_true")
    ap.add_argument("--demo", action="store_true")
    args = ap.parse_args()

    base = timed([PY, "-c", "pass"], args.repeats)
    help_t = timed([PY, "-m", "polar_hpc", "--help"], args.repeats)
    dry = timed([PY, "-m", "polar_hpc", "launch", "recipes/swegym-offline-sft.toml", "--dry-run"], args.repeats)
    med = statistics.median
    print(f"{'what':<34} {'median s':>9} {'min s':>7} {'x python':>9}  target")
    print(f"{'python -c pass':<34} {med(base):>9.3f} {min(base):>7.3f} {1.0:>9.1f}")
    print(f"{'polar-hpc --help':<34} {med(help_t):>9.3f} {min(help_t):>7.3f} {med(help_t) / med(base):>9.1f}  <= 0.5 s")
    print(f"{'launch --dry-run (swegym recipe)':<34} {med(dry):>9.3f} {min(dry):>7.3f} "
          f"{med(dry) / med(base):>9.1f}  <= 1 s")

    backends = ["local"] + (["slurm"] if args.slurm else [])
    with tempfile.TemporaryDirectory(prefix="bench-launch-") as tmp:
        for backend in backends:
            if backend == "slurm" and not os.environ.get("SLURM_CONF"):
                print("slurm: skipped (SLURM_CONF not set; run `bash .ci/slurm.sh up`)")
                continue
            t = ready_time(backend, Path(tmp) / f"run-{backend}", ranks=2)
            print(f"{'launch -> ready, ' + backend + ' (2 ranks)':<34} {t:>9.2f}")
        if args.demo:
            run_dir = Path(tmp) / "demo"
            t0 = time.perf_counter()
            subprocess.run([PY, "-m", "polar_hpc", "launch", "recipes/local-demo.toml", "--run-dir", str(run_dir),
                            "--wait"], cwd=ROOT, capture_output=True, check=True)
            wall = time.perf_counter() - t0
            status = RunDir(run_dir).read_status()
            n = status.sessions.get("committed", 0) if status else 0
            print(f"{'local demo wall time':<34} {wall:>9.1f}   sessions {n}, {60 * n / wall:.2f} sessions/min")


if __name__ == "__main__":
    main()
