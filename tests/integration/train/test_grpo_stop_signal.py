"""``polar-hpc train grpo`` owns the run it launched: a stop signal (SIGTERM, SIGINT, Slurm's pre-timeout SIGUSR2,
``cancel``'s SIGUSR1) after the first step ends training at a step boundary with that step's checkpoint saved,
cancels the launched run (every component's pid gone, read the way ``status``/``cancel`` read them; the shards
committed) and exits 128 + the signal. The real stack on tiny-qwen3 (reference server, coordinator, a gateway rank
with bubblewrap sandboxes running ``recipes/local-grpo.toml``'s curl call), the CLI in a subprocess.

SIGTERM and SIGUSR2 run the whole way (one step, then the signal); SIGINT and SIGUSR1 take the same path through
the handlers (``tests/unit/train/test_grpo_stop.py``) and are sent twice here: the second stops at once, the run is
still cancelled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
pytest.importorskip("torch", reason="the train extra (torch, trl) is not installed")

ROOT = Path(__file__).parents[3]
RECIPE = ROOT / "recipes" / "local-grpo.toml"
TINY = ["inference.model=asset:tiny-qwen3", "trainer.steps=50", "trainer.groups_per_step=2", "tasks.num_samples=4",
        "trainer.max_off_policy_steps=1", "trainer.threads=1"]


def _wait_for(what: str, cond: object, timeout_s: float, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():  # type: ignore[operator]
        assert proc.poll() is None, f"the trainer exited ({proc.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} after {timeout_s:.0f}s"
        time.sleep(0.5)


# Slurm's time limit (TERM) and its pre-timeout signal sent twice (USR2, as a job step's every process gets it);
# INT and USR1 take the same path, checked with real signals in tests/unit/train/test_grpo_stop.py (a minute
# each here)
@pytest.mark.parametrize(("sig", "times"), [(signal.SIGTERM, 1), (signal.SIGUSR2, 2)], ids=["TERM", "USR2-twice"])
def test_a_stop_signal_saves_the_step_cancels_the_run_and_exits_128_plus_it(tmp_path: Path, sig: signal.Signals,
                                                                            times: int) -> None:
    from polar_hpc.launch.monitor import component_states
    from polar_hpc.store.reader import ShardReader
    from polar_hpc.train.grpo.metrics import CHECKPOINTS, read_steps
    from polar_hpc.wire.rundir import RunDir
    from tests.integration.launch.helpers import stop_run

    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "polar_hpc", "train", "grpo", str(RECIPE), "--run-dir", str(run_dir),
           *[a for s in TINY for a in ("--set", s)]]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for("first step", lambda: run_dir.is_dir() and read_steps(run_dir), 300, proc)
        for _ in range(times):
            proc.send_signal(sig)
            time.sleep(0.2)
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stop_run(run_dir)
    assert proc.returncode == 128 + sig, out[-3000:]
    steps = read_steps(run_dir)
    assert 1 <= len(steps) < 50, out[-3000:]
    ckpts = sorted(p.name for p in (run_dir / CHECKPOINTS).glob("step-*"))
    assert f"step-{steps[-1].step}" in ckpts and not list((run_dir / CHECKPOINTS).glob("*.tmp")), ckpts
    run = RunDir(run_dir)
    jobs = run.read_jobs()
    assert jobs is not None and run.cancelled() is not None
    alive = [f"{c.component}-{c.index}" for c in component_states(run, jobs) if c.alive]
    assert not alive, f"still running after the trainer exited: {alive}"
    results = list(ShardReader(run_dir).results())
    assert len(results) >= 8, len(results)  # at least the first step's 2 groups x 4 sessions, committed
    assert not list(run_dir.rglob("*.h5.tmp"))
    assert "cancelling the launched run" in out
