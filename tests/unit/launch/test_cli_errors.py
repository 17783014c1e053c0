"""Ordinary mistakes on the command line: one line on stderr, exit 2, no traceback, nothing written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[3]


def _polar(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "polar_hpc", *args], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)


@pytest.mark.parametrize("command", [["cancel"], ["resume"], ["status"], ["resume", "--wait"]])
def test_missing_run_dir(tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "nope"
    out = _polar(command[0], str(missing), *command[1:])
    assert (out.returncode, out.stderr) == (2, f"polar-hpc: {missing}: no such run directory\n")
    assert not missing.exists()


def test_not_a_run_dir_and_nothing_launched(tmp_path: Path) -> None:
    out = _polar("cancel", str(tmp_path))
    assert (out.returncode, out.stderr) == (2, f"polar-hpc: {tmp_path}: not a polar-hpc run directory "
                                               "(no config.toml)\n")
    (tmp_path / "config.toml").write_text("name = 'x'\n")
    out = _polar("cancel", str(tmp_path))
    assert (out.returncode, out.stderr) == (2, f"polar-hpc: {tmp_path}: nothing was launched here (no jobs.json)\n")


def test_launch_into_an_existing_run_dir(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("name = 'x'\n")
    out = _polar("launch", str(ROOT / "recipes" / "local-shell.toml"), "--run-dir", str(tmp_path), "--no-submit")
    assert (out.returncode, out.stderr) == (2, f"polar-hpc: {tmp_path} already holds a run; use `polar-hpc resume "
                                               f"{tmp_path}` or another --run-dir\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]


def test_missing_recipe(tmp_path: Path) -> None:
    out = _polar("launch", str(tmp_path / "r.toml"))
    assert (out.returncode, out.stderr) == (2, f"polar-hpc: {tmp_path / 'r.toml'}: no such recipe file\n")
