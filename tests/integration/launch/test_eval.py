"""``polar-hpc eval`` end to end: real reference server (tiny Qwen3), real pi CLI in bwrap, the generated held-out
tasks graded by pytest; sampled sessions counted by cause, then the oracle through the same command (pass@1 = 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polar_hpc.config import load_recipe
from polar_hpc.measure.causes import FAILURES
from polar_hpc.measure.stats import wilson
from tests.integration.launch.helpers import ROOT, polar, stop_run

pytestmark = [pytest.mark.slow, pytest.mark.harness]

RECIPE = str(ROOT / "recipes" / "distill-pi.toml")
HELDOUT = str(ROOT / "recipes" / "tasks" / "distill" / "heldout.jsonl")


def _eval(tmp_path: Path, name: str, *args: str) -> dict[str, object]:
    out = polar("eval", RECIPE, "--model", "asset:tiny-qwen3", "--tasks", HELDOUT, "--limit", "2",
                "--runs-dir", str(tmp_path / "runs"), "--json", str(tmp_path / f"{name}.json"), "--timeout", "500",
                "--set", "inference.max_new_tokens=48", *args, timeout=560)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "pass@1" in out.stdout and "CI: 95% Wilson score interval" in out.stdout
    (row,) = json.loads((tmp_path / f"{name}.json").read_text())
    assert isinstance(row, dict)
    return row


@pytest.mark.timeout(1300)
def test_eval_samples_counts_causes_and_the_oracle_passes(tmp_path: Path) -> None:
    try:
        row = _eval(tmp_path, "sampled", "--samples", "2", "--seed", "3")
        assert (row["harness"], row["split"], row["n"], row["task_count"], row["k"]) == ("pi", "heldout", 4, 2, 2)
        causes = row["causes"]
        assert isinstance(causes, dict) and set(causes) == set(FAILURES)
        passed = round(float(row["pass_at_1"]) * 4)  # type: ignore[arg-type]
        assert passed + sum(causes.values()) == 4
        assert (row["ci_low"], row["ci_high"]) == pytest.approx(wilson(passed, 4), abs=1e-9)
        assert row["pass_at_k"] is not None and float(row["session_s"]) > 0  # type: ignore[arg-type]
        cfg = load_recipe(Path(str(row["run_dir"])) / "config.toml")
        assert (cfg.inference.random_seed, cfg.agent.policy, cfg.tasks.num_samples) == (3, "sample", 2)

        gold = _eval(tmp_path, "oracle", "--set", 'agent.policy="oracle"')
        assert (gold["n"], gold["pass_at_1"], gold["pass_at_k"]) == (2, 1.0, None)
        gold_causes = gold["causes"]
        assert isinstance(gold_causes, dict) and sum(gold_causes.values()) == 0
        assert gold["ci_low"] == pytest.approx(wilson(2, 2)[0], abs=1e-9)
    finally:
        for run in (tmp_path / "runs").glob("*"):
            stop_run(run)
