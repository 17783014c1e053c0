"""SFT export throughput, side by side in one run: ``export sft`` to JSONL, Parquet and ``hf`` (save_to_disk)
beside the raw token-level ``shards export`` (JSONL) of the same traces, on ``--traces`` synthetic agent traces
(chat messages with tool calls, sized like the tokens). Prints traces/s and output MB/s per format and the ratio
to the raw export.

    python tools/bench/bench_export.py [--traces 100000] [--traces-per-session 4] [--formats jsonl,parquet,hf]

Sessions are copies of a pool of random sessions, each with its first prompt ids changed so that no two traces
have the same tokens (the export drops content duplicates).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import msgspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from polar_hpc.config.run import ShardConfig  # noqa: E402
from polar_hpc.export.sft import export_sft  # noqa: E402
from polar_hpc.export.shards import export_jsonl  # noqa: E402
from polar_hpc.store.reader import ShardReader  # noqa: E402
from polar_hpc.store.writer import ShardWriter  # noqa: E402
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.rundir import RunDir
from tests.fixtures.trajectories import make_session_result  # noqa: E402

REPOS = ("django__django", "astropy__astropy", "psf__requests", "pallets__flask", "sympy__sympy")


def _unique(r: SessionResult, i: int, task_id: str) -> SessionResult:
    traces = []
    for j, t in enumerate(r.trajectory.traces):
        p = t.prompt_ids.copy()
        p[:3] = (i & 0xFFFF, i >> 16, j)
        traces.append(msgspec.structs.replace(t, prompt_ids=p))
    traj = msgspec.structs.replace(r.trajectory, traces=traces)
    return msgspec.structs.replace(r, task_id=task_id, sample_index=i % 4, trajectory=traj)


def make_run(root: Path, traces: int, per_session: int) -> int:
    rng = np.random.default_rng(0)
    pool = [make_session_result(rng, traces=per_session, turns=4, prompt_tokens=(512, 2048),
                                response_tokens=(32, 256), tool_tokens=(32, 256), reward=1.0) for _ in range(32)]
    n = (traces + per_session - 1) // per_session
    with ShardWriter(RunDir(root).shards, 0, ShardConfig(max_sessions=512), {"bench": "export"}) as w:
        for i in range(n):
            w.add(_unique(pool[i % len(pool)], i, f"{REPOS[i % len(REPOS)]}-{i // 4}"))
    return n


def du(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--traces", type=int, default=100_000)
    p.add_argument("--traces-per-session", type=int, default=4)
    p.add_argument("--formats", default="jsonl,parquet,hf")
    p.add_argument("--dir", type=Path)
    args = p.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-export-"))
    t0 = time.perf_counter()
    sessions = make_run(root / "run", args.traces, args.traces_per_session)
    print(f"wrote {sessions} sessions ({sessions * args.traces_per_session} traces) in "
          f"{time.perf_counter() - t0:.1f} s under {root}")

    first = sorted(RunDir(root / "run").shards.glob("*.h5"))[0]
    for fmt in args.formats.split(","):  # warm-up: imports and first-call costs out of the timings
        export_sft([first], root / "warm", fmt=fmt)
        shutil.rmtree(root / "warm")
    rows: list[tuple[str, int, float, int]] = []
    t0 = time.perf_counter()
    n = export_jsonl(ShardReader(root / "run"), None, root / "raw.jsonl")
    rows.append(("shards export (raw jsonl)", n, time.perf_counter() - t0, du(root / "raw.jsonl")))
    (root / "raw.jsonl").unlink()
    for fmt in args.formats.split(","):
        out = root / f"sft-{fmt}"
        t0 = time.perf_counter()
        m = export_sft([root / "run"], out, fmt=fmt, test_fraction=0.1)
        rows.append((f"export sft --format {fmt}", sum(m.traces.values()), time.perf_counter() - t0, du(out)))
        shutil.rmtree(out)
    base = rows[0][1] / rows[0][2]
    print(f"\n{'what':30} {'traces':>8} {'seconds':>8} {'traces/s':>9} {'MB out':>8} {'MB/s':>7} {'vs raw':>7}")
    for name, n, s, size in rows:
        print(f"{name:30} {n:8d} {s:8.1f} {n / s:9.0f} {size / 1e6:8.0f} {size / 1e6 / s:7.1f} "
              f"{(n / s) / base:7.2f}")
    if not args.dir:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
