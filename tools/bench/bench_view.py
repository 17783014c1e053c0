"""Session viewer generation time for ``--sessions`` synthetic sessions (agent-like: several chains, tool calls,
token view data), side by side: the site without token text, with token text from the real Qwen3 tokenizer
(``asset:qwen3-tokenizer``), and the report alone (``polar-hpc report``, which the site includes). Prints
seconds, sessions/s and MB written.

    python tools/bench/bench_view.py [--sessions 1000] [--traces 2] [--turns 6]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from polar_hpc.config.run import ShardConfig  # noqa: E402
from polar_hpc.report.run import write_report  # noqa: E402
from polar_hpc.store.writer import ShardWriter  # noqa: E402
from polar_hpc.view.model import load_tokenizer  # noqa: E402
from polar_hpc.view.site import write_site  # noqa: E402
from polar_hpc.wire.rundir import RunDir
from tests.fixtures.trajectories import make_session_result  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sessions", type=int, default=1000)
    p.add_argument("--traces", type=int, default=2)
    p.add_argument("--turns", type=int, default=6)
    p.add_argument("--tokenizer", default="asset:qwen3-tokenizer")
    p.add_argument("--dir", type=Path)
    args = p.parse_args()
    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-view-"))
    rng = np.random.default_rng(0)
    with ShardWriter(RunDir(root / "run").shards, 0, ShardConfig(max_sessions=256), {"bench": "view"}) as w:
        for i in range(args.sessions):
            w.add(make_session_result(rng, task_id=f"octo__repo-{i}", sample_index=0, traces=args.traces,
                                      turns=args.turns, prompt_tokens=(512, 2048), response_tokens=(32, 256),
                                      tool_tokens=(32, 256)))
    tok = load_tokenizer(args.tokenizer)
    write_report([root / "run"], root / "warm")  # warm-up: matplotlib and first-call costs out of the timings
    rows = []
    for name, tk in (("site, token ids", None), ("site, token text (Qwen3)", tok)):
        out = root / "site"
        s = write_site(root / "run", out, tokenizer=tk)
        rows.append((name, s.seconds, s.bytes))
        shutil.rmtree(out)
    t0 = time.perf_counter()
    write_report([root / "run"], root / "report")
    rows.append(("report alone (in the site)", time.perf_counter() - t0, 0))
    print(f"{args.sessions} sessions x {args.traces} chains x {args.turns} turns\n")
    print(f"{'what':28} {'seconds':>8} {'sessions/s':>10} {'MB':>7}")
    for name, secs, size in rows:
        print(f"{name:28} {secs:8.1f} {args.sessions / secs:10.0f} {size / 1e6:7.1f}")
    if not args.dir:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
