"""The soak benchmark (``tools/bench/bench_soak.py``) at a small size, so that it cannot rot: the real stack on the
local backend (coordinator, two gateway ranks, bwrap sandboxes, the shell harness's curl agent making 8 calls a
session) against the FAKE engine stub process; every session committed exactly once, and the sampler's figures
present for every component."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.launch.helpers import ROOT

pytestmark = pytest.mark.slow

BENCH = ROOT / "tools" / "bench" / "bench_soak.py"
SESSIONS = 100


def test_soak_small_every_session_once_and_every_component_sampled(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--sessions", str(SESSIONS), "--ranks", "2", "--calls", "8", "--interval", "0.25",
         "--window", "10", "--run-dir", str(run_dir), "--out", str(out)],
        capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    r = json.loads(out.read_text())
    assert r["finished"] and r["sessions_done"] == SESSIONS
    s = r["shards"]
    assert s["exactly_once"] and s["sessions"] == s["expected"] == SESSIONS, s
    assert s["statuses"] == {"COMPLETED": SESSIONS}, s
    assert not r["left_behind"], "a finished run's components exit by themselves"
    assert sum(w["sessions"] for w in r["windows"]) == SESSIONS - r["samples"][0]["done"]

    components = r["components"]
    expected = {"coordinator", "gateway-0", "gateway-1", "engine-stub (FAKE)"}
    assert expected <= set(components), sorted(components)
    for name in expected:
        row = components[name]
        assert row["samples"] >= 3, (name, row)
        assert row["rss_mb"]["first"] > 0 and row["fds"]["first"] > 0 and row["threads"]["first"] >= 1, (name, row)
        for field in ("rss_mb", "fds", "threads", "children"):
            assert isinstance(row[field]["per_1000"], float | int), (name, field, row)
    # every sample of the run saw the engine stub, and the gateways while sessions were being done
    assert all("engine-stub (FAKE)" in x["procs"] for x in r["samples"])
    busy = [x for x in r["samples"] if 0 < x["done"] < SESSIONS]
    assert busy and all({"gateway-0", "gateway-1"} <= set(x["procs"]) for x in busy)
