"""The cluster-scale benchmark (``tools/bench/bench_cluster.py``) at a tiny size, so that it cannot rot: the real
coordinator process over CURVE sockets with FAKE simulated ranks speaking the real control protocol (dispatch,
heartbeats, kill -9 of the coordinator and adoption of the held sessions, completion), real shard writers into one
dir with the resume index over them, and the before/after comparison of the pending queue."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "tools" / "bench" / "bench_cluster.py"

pytestmark = pytest.mark.slow


def test_bench_cluster_tiny_every_session_once_and_adopted_after_kill(tmp_path: Path) -> None:
    out = tmp_path / "cluster.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--ranks", "3", "--sessions-per-rank", "32", "--hold", "1",
         "--commit-every", "16", "--writer-procs", "1", "--json", str(out), "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    r = json.loads(out.read_text())
    c = r["coordinator"]
    assert c["committed"] == c["sessions"] == 96 and c["duplicates"] == 0, c
    assert c["dispatched_again"] == 0, "a restarted coordinator adopts what the ranks hold; nothing runs twice"
    assert c["journal_bytes"] > 0 and c["hold_cpu_pct"] >= 0
    w = r["writers"]
    assert w["resume_keys"] == w["sessions"] == 96 and w["shards"] == 6 and w["resume_duplicates"] == 0, w
    assert r["compare"]["heap_entries_after"] <= 2 * 3 + 64


def test_bench_cluster_bad_size_is_one_line_exit_2() -> None:
    done = subprocess.run([sys.executable, str(BENCH), "--sessions-per-rank", "10"], capture_output=True, text=True,
                          timeout=30, cwd=ROOT)
    assert done.returncode == 2 and "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
