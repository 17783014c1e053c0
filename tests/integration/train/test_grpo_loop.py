"""tools/grpo_loop.py through the whole local stack: groups come back, weights are pushed, records follow."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[3]


@pytest.mark.timeout(600)  # the loop's own deadline is 540 s
def test_grpo_loop_advances_weight_version(tmp_path: Path) -> None:
    from tests.integration.launch.helpers import stop_run

    try:
        out = subprocess.run([sys.executable, str(ROOT / "tools" / "grpo_loop.py"), "--steps", "3", "--run-dir",
                              str(tmp_path / "run")], capture_output=True, text=True, timeout=540, cwd=ROOT,
                             stdin=subprocess.DEVNULL)
    finally:
        stop_run(tmp_path / "run")  # whatever the loop launched, even when it timed out
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    steps = re.findall(r"step (\d): .*reward ([\d.]+)\s+loss (\S+)\s+weight_version in records \[(.*?)\]",
                       out.stdout)
    assert [s[0] for s in steps] == ["0", "1", "2"], out.stdout
    # step 2's groups were submitted after v1 was pushed (one step off policy): their records say so
    assert "'1'" in steps[2][3] and "'default'" in steps[0][3], out.stdout
    assert "weight updates 3" in out.stdout
    assert (tmp_path / "run" / "checkpoints" / "step-3" / "model.safetensors").exists()
