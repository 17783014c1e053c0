"""``polar-hpc doctor``: real probes of this node; what a recipe needs is required (exit 1 when missing)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from polar_hpc.config import load_recipe
from polar_hpc.launch.doctor import check_assets, check_disk, check_sandboxes, diagnose, render

ROOT = Path(__file__).parents[3]
SHELL = ROOT / "recipes" / "local-shell.toml"


def test_bwrap_user_namespaces_probe_runs_for_real() -> None:
    (bwrap, *_rest) = check_sandboxes(load_recipe(SHELL))
    assert bwrap.name == "bwrap" and bwrap.required
    assert bwrap.ok == (shutil.which("bwrap") is not None), bwrap


def test_recipe_needs_become_required_and_fail_with_a_fix(tmp_path: Path) -> None:
    cfg = load_recipe(SHELL, ["runtime.backend=apptainer", "inference.model=asset:nope-model"])
    app = next(f for f in check_sandboxes(cfg) if f.name == "apptainer")
    if shutil.which("apptainer") is None and shutil.which("singularity") is None:
        assert not app.ok and app.required and app.fix.startswith("module load apptainer")
    assert all(not f.required for f in check_sandboxes(None))
    (disk,) = check_disk(load_recipe(SHELL, [f"launch.run_dir={tmp_path}/a/b"]))
    assert disk.required and f"under {tmp_path}/a/b" in disk.detail
    assert {f.name for f in check_assets(None)} >= {"asset qwen3-tokenizer", "asset tiny-qwen3"}
    text = render(diagnose(cfg))
    assert "bwrap" in text and "disk" in text


def test_cli_exit_status_follows_required_findings() -> None:
    out = subprocess.run([sys.executable, "-m", "polar_hpc", "doctor", str(SHELL), "--set",
                          "runtime.backend=apptainer"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    if shutil.which("apptainer") is None and shutil.which("singularity") is None:
        assert out.returncode == 1, out.stdout + out.stderr
        assert "FAIL apptainer" in out.stdout and "fix: module load apptainer" in out.stdout
    out = subprocess.run([sys.executable, "-m", "polar_hpc", "doctor"], capture_output=True, text=True, timeout=120,
                         cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "FAIL" not in out.stdout and "ok   python" in out.stdout
