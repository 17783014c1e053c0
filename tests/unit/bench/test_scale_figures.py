"""The pure parts of ``tools/bench/bench_scale.py`` (``scale_figures``): think times, percentiles, the harness's
call lines, the proxy's own time from completion records, and which processes below a rank are ours."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools" / "bench"))

from scale_figures import (  # noqa: E402
    call_times,
    classify,
    descendants_of,
    percentile,
    proc_cost,
    record_latencies_s,
    think_times,
)


def test_think_times_add_up_to_the_hold_and_have_a_long_tail() -> None:
    rng = random.Random(1)
    sessions = [think_times(rng, 6, 60.0) for _ in range(500)]
    for pauses in sessions:
        assert len(pauses) == 6 and all(p > 0 for p in pauses)
        assert 60 * 0.8 - 0.01 <= sum(pauses) <= 60 * 1.2 + 0.01
    flat = sorted(p for s in sessions for p in s)
    median, p99 = flat[len(flat) // 2], flat[int(len(flat) * 0.99)]
    assert p99 > 4 * median, (median, p99)  # most pauses short, a few long
    with pytest.raises(ValueError):
        think_times(rng, 0, 60.0)


def test_percentile_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0], 99) == 3.0
    values = [float(i) for i in range(1, 101)]
    assert percentile(values, 50) == 50.0 and percentile(values, 99) == 99.0 and percentile(values, 100) == 100.0
    assert percentile(list(reversed(values)), 0) == 1.0


def test_call_times_reads_only_call_lines() -> None:
    tail = "ally cut line\ncall 0.004213\ncurl: (7) refused\ncall bad\ncall 1.5\n"
    assert call_times(tail) == [0.004213, 1.5]


def test_record_latencies_leave_the_engine_out() -> None:
    rows = [{"timings": {"received": 10.0, "engine_start": 10.002, "engine_end": 10.052, "responded": 10.055}},
            {"timings": {}}, {"completion_id": "x"}]
    got = record_latencies_s("\n".join(json.dumps(r) for r in rows).encode() + b"\n\n")
    assert len(got) == 1
    received, own, engine = got[0]
    assert received == 10.0 and own == pytest.approx(0.005) and engine == pytest.approx(0.05)


def test_classify_and_descendants() -> None:
    assert classify("bwrap", "bwrap --unshare-user ...") == "bwrap"
    assert classify("python3", "python3 -I -S /polar/runtime/uds_forward.py --listen 127.0.0.1:28080") == "forwarder"
    assert classify("curl", "curl -sS http://127.0.0.1:28080") == "harness"
    parents = {2: 1, 3: 2, 4: 2, 5: 9, 6: 4}
    assert sorted(descendants_of(1, parents)) == [2, 3, 4, 6]
    assert descendants_of(5, parents) == []


def test_proc_cost_of_this_process_and_of_none() -> None:
    me = proc_cost(os.getpid())
    assert me is not None and me.count == 1 and me.rss_mb > 0 and me.pss_mb > 0 and me.fds > 0 and me.cpu_s > 0
    assert proc_cost(2**22 + 7) is None
