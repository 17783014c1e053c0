"""Trainer reader throughput beside the raw shard read, in the same run.

1. Raw: ``ShardReader.traces(blobs=False)`` touching every trace's token views (sequential, what the store
   offers); tokens/s over prompt + response tokens.
2. Packed: ``TraceReader.batches()`` building packed numpy batches (input ids, loss mask, logprobs, positions,
   segments) under a token budget, shuffled (global permutation) and in order; tokens/s of the same tokens.
3. Index: ``build_index`` (selection + session dedup, and with content dedup hashing every trace), and with
   ``trainable_only`` (reads ``traces/trainable``; shards before schema 3 decode every trace blob for it).
Ratio = packed / raw. Best of ``--rounds`` (the machine may be shared).

    python tools/bench/bench_reader.py [--sessions 256] [--traces 4] [--turns 20] [--budget 32768] [--rounds 3]
        [--messages]   (chat messages sized like the tokens in the trace blobs; default: metadata only)
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from polar_hpc.config.run import ShardConfig  # noqa: E402
from polar_hpc.store.index import build_index  # noqa: E402
from polar_hpc.store.reader import ShardReader  # noqa: E402
from polar_hpc.store.select import TraceSelect  # noqa: E402
from polar_hpc.store.writer import ShardWriter  # noqa: E402
from polar_hpc.train.reader import ReaderConfig, TraceReader  # noqa: E402
from polar_hpc.wire.rundir import RunDir
from tests.fixtures.trajectories import make_session_result  # noqa: E402


def best(fn: Callable[[], int], rounds: int) -> tuple[float, int]:
    times, n = [], 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        n = fn()
        times.append(time.perf_counter() - t0)
    return min(times), n


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=256)
    p.add_argument("--traces", type=int, default=4)
    p.add_argument("--turns", type=int, default=20)
    p.add_argument("--shard-sessions", type=int, default=64)
    p.add_argument("--budget", type=int, default=32768)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--dir", type=Path)
    p.add_argument("--messages", action="store_true", help="write chat messages into the trace blobs")
    args = p.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-reader-"))
    rng = np.random.default_rng(0)
    with ShardWriter(RunDir(root).shards, 0, ShardConfig(max_sessions=args.shard_sessions), {"bench": "reader"}) as w:
        for i in range(args.sessions):
            w.add(make_session_result(rng, task_id=f"t{i}", sample_index=0, traces=args.traces, turns=args.turns,
                                      prompt_tokens=(1024, 4096), response_tokens=(32, 512),
                                      tool_tokens=(32, 512), messages=args.messages))

    def raw() -> int:
        n = 0
        for t in ShardReader(root).traces(blobs=False):
            n += t.prompt_ids.shape[0] + t.response_ids.shape[0]
        return n

    index = build_index(root, dedup="session")

    def packed(shuffle: bool) -> Callable[[], int]:
        def run() -> int:
            reader = TraceReader(root, config=ReaderConfig(token_budget=args.budget, shuffle=shuffle,
                                                           oversize="truncate"), index=index)
            return sum(b.num_tokens for b in reader.batches())
        return run

    t_raw, n_raw = best(raw, args.rounds)
    t_seq, n_seq = best(packed(False), args.rounds)
    t_shuf, n_shuf = best(packed(True), args.rounds)
    t_ix, _ = best(lambda: len(build_index(root, dedup="session")), args.rounds)
    t_ixc, _ = best(lambda: len(build_index(root, dedup="content")), args.rounds)
    trainable = TraceSelect(trainable_only=True)
    t_ixt, _ = best(lambda: len(build_index(root, trainable, dedup="session")), args.rounds)
    mtok = n_raw / 1e6
    print(f"{args.sessions} sessions x {args.traces} traces, {mtok:.1f}M tokens, budget {args.budget}")
    print(f"  raw ShardReader.traces        {n_raw / t_raw / 1e6:8.1f} M tok/s")
    print(f"  packed, in order              {n_seq / t_seq / 1e6:8.1f} M tok/s   "
          f"ratio {t_raw / t_seq * n_seq / n_raw:.2f}")
    print(f"  packed, shuffled              {n_shuf / t_shuf / 1e6:8.1f} M tok/s   ratio "
          f"{t_raw / t_shuf * n_shuf / n_raw:.2f}")
    print(f"  index (session dedup)         {t_ix * 1e3:8.1f} ms")
    print(f"  index (content dedup)         {t_ixc * 1e3:8.1f} ms   ({n_raw / t_ixc / 1e6:.0f} M tok/s hashed)")
    print(f"  index (trainable only)        {t_ixt * 1e3:8.1f} ms   ratio to session dedup {t_ixt / t_ix:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
