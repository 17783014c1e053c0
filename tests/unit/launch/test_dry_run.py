from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from polar_hpc.config import ConfigError, load_recipe
from polar_hpc.launch.submit import render_sbatch
from polar_hpc.wire.rundir import RunDir

ROOT = Path(__file__).parents[3]
GOLDEN = Path(__file__).parent / "golden"
RUN = "/shared/runs/golden"


def _normalized(text: str) -> str:
    return text.replace(sys.executable, "PYTHON").replace(str(ROOT), "ROOT")


@pytest.mark.parametrize("recipe", ["swegym-offline-sft", "swegym-grpo-async", "local-demo"])
def test_sbatch_scripts_match_golden(recipe: str) -> None:
    cfg = load_recipe(ROOT / "recipes" / f"{recipe}.toml", ["gateway.num_ranks=3"])
    scripts = render_sbatch(cfg, RunDir(RUN))
    text = "".join(f"# {name}\n{_normalized(script)}\n" for name, script in scripts.items())
    golden = GOLDEN / f"{recipe}.sbatch"
    if os.environ.get("POLAR_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text(), f"sbatch for {recipe} changed; POLAR_UPDATE_GOLDEN=1 rewrites {golden}"


def test_gateway_is_one_array_and_resources_reach_sbatch() -> None:
    cfg = load_recipe(ROOT / "recipes" / "swegym-offline-sft.toml", ["gateway.num_ranks=4"])
    scripts = render_sbatch(cfg, RunDir(RUN))
    assert "#SBATCH --array=0-3%4" in scripts["gateway"]
    assert "#SBATCH --gpus-per-node=8" in scripts["inference"]
    assert "#SBATCH --requeue" in scripts["coordinator"]
    assert f"export PYTHONPATH={RUN}/code" in scripts["gateway"]


def test_site_defaults_fill_unset_fields(tmp_path: Path) -> None:
    cfg = load_recipe(ROOT / "recipes" / "swegym-offline-sft.toml", ["launch.site=example"])
    scripts = render_sbatch(cfg, RunDir(RUN))
    assert "#SBATCH --partition=gpu" in scripts["inference"]
    assert "#SBATCH --account=my-lab" in scripts["gateway"]
    assert "#SBATCH --exclusive=user" in scripts["gateway"]
    bad = load_recipe(ROOT / "recipes" / "swegym-offline-sft.toml", ["launch.site=nowhere"])
    with pytest.raises(ConfigError, match="known sites: example"):
        render_sbatch(bad, RunDir(RUN))


def test_cli_dry_run_submits_nothing_and_bad_recipe_fails_first(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    out = subprocess.run(
        [sys.executable, "-m", "polar_hpc", "launch", str(ROOT / "recipes/local-demo.toml"), "--dry-run",
         "--run-dir", str(run_dir)],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "# sbatch script: gateway" in out.stdout and "[gateway]" in out.stdout
    assert not run_dir.exists()
    bad = tmp_path / "bad.toml"
    bad.write_text("[gateway]\nnum_ranks = 'x'\n")
    out = subprocess.run(
        [sys.executable, "-m", "polar_hpc", "launch", str(bad), "--run-dir", str(run_dir)],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 2
    assert "gateway.num_ranks" in out.stderr
    assert not run_dir.exists()


def test_signal_delay_covers_drain_commit_and_requeue() -> None:
    from polar_hpc.launch.budget import REQUEUE_MARGIN_S, signal_delay_s, stop_grace_s

    cfg = load_recipe(ROOT / "recipes" / "local-demo.toml", ["gateway.drain_grace_s=200"])
    assert stop_grace_s(cfg) > cfg.gateway.drain_grace_s
    assert signal_delay_s(cfg) >= stop_grace_s(cfg) + REQUEUE_MARGIN_S
    for script in render_sbatch(cfg, RunDir(RUN)).values():
        assert f"#SBATCH --signal=USR2@{signal_delay_s(cfg)}" in script


def test_launch_requeue_reaches_sbatch_and_the_job_body() -> None:
    from polar_hpc.launch.jobs import ComponentJob

    cfg = load_recipe(ROOT / "recipes" / "swegym-offline-sft.toml", ["launch.requeue=false"])
    for script in render_sbatch(cfg, RunDir(RUN)).values():
        assert "#SBATCH --no-requeue" in script and "#SBATCH --requeue" not in script
    job = ComponentJob(RUN, "gateway", 0, requeue=False)
    assert job.checkpoint() is None  # submitit: "checkpoint function returned None" -> the job ends
    again = ComponentJob(RUN, "gateway", 0).checkpoint()
    assert isinstance(again.function, ComponentJob) and again.function.requeue


def test_trainer_section_is_what_async_rollouts_uses(tmp_path: Path) -> None:
    from polar_hpc.train.async_client import AsyncConfig

    RunDir(tmp_path).config_path.write_text("[trainer]\nmax_off_policy_steps = 3\nmin_group_fraction = 0.5\n")
    assert AsyncConfig.from_run(tmp_path) == AsyncConfig(max_off_policy_steps=3, min_group_fraction=0.5)
    assert AsyncConfig.from_run(tmp_path / "none") == AsyncConfig()
