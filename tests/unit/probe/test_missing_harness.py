"""A harness CLI that is not installed: ``polar-hpc probe`` says so in one line, exit 2, before any server starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_probe_of_a_harness_not_installed_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "POLAR_HARNESS_PREFIX": str(tmp_path / "none"), "PATH": "/nonexistent"}
    done = subprocess.run([sys.executable, "-m", "polar_hpc", "probe", "mini_swe_agent", "--out", str(tmp_path / "p")],
                          capture_output=True, text=True, timeout=60, cwd=REPO, env=env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("polar-hpc probe: harness 'mini_swe_agent': harness CLI `mini`: "
                                                   f"not in {tmp_path / 'none'}/npm/bin"), done.stderr
    assert "install_harnesses.sh" in lines[0] and "Traceback" not in done.stderr
