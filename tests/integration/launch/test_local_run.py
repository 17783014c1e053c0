"""The launcher's local backend end to end: real reference server, coordinator, gateway, bwrap, shell harness."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar_hpc.wire.rundir import RunDir
from tests.fixtures.waits import wait_for
from tests.integration.launch.helpers import ROOT, committed_keys, kill_run, polar

pytestmark = pytest.mark.slow

RECIPE = str(ROOT / "recipes" / "local-shell.toml")


def _expected(samples: int = 2) -> set[str]:
    return {f"{t}/{i}" for t in ("calc-add", "fizzbuzz-15", "words-reverse") for i in range(samples)}


@pytest.mark.timeout(600)
def test_local_run_completes_and_status_reports_it(run_dir: Path) -> None:
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), "--wait", "--timeout", "500", timeout=560)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "tail -F" in out.stdout and "polar-hpc status" in out.stdout
    keys, dups = committed_keys(run_dir)
    assert sorted(keys) == sorted(_expected())
    assert dups == 0
    val = polar("shards", "validate", str(RunDir(run_dir).shards))
    assert val.returncode == 0, val.stdout + val.stderr
    st = polar("status", str(run_dir), "--json")
    assert st.returncode == 0 and '"finished": true' in st.stdout, st.stdout
    assert '"coordinator"' in st.stdout and '"pid"' in st.stdout


@pytest.mark.timeout(1000)
def test_resume_after_sigkill_of_every_component(run_dir: Path) -> None:
    out = polar("launch", RECIPE, "--run-dir", str(run_dir), "--set", "shards.max_sessions=1",
                "--set", "tasks.num_samples=5", "--set", "gateway.run_pool=1")
    assert out.returncode == 0, out.stderr
    wait_for(lambda: bool(list(RunDir(run_dir).shards.glob("*.h5"))), 400, "the run's first shard", interval_s=0.2)
    kill_run(run_dir)
    before, _ = committed_keys(run_dir)
    assert 0 < len(before) < len(_expected(5))
    status = RunDir(run_dir).read_status()
    assert status is None or not status.finished
    out = polar("resume", str(run_dir), "--wait", "--timeout", "500", timeout=560)
    assert out.returncode == 0, out.stdout + out.stderr
    keys, dups = committed_keys(run_dir)
    assert set(before) <= set(keys)
    assert sorted(keys) == sorted(_expected(5))
    assert dups == 0, "a session committed before the kill was run again"
