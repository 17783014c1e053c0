"""``polar-hpc train grpo`` refuses bad input before launching anything: one line, exit 2, no run dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar_hpc.cli.entry import main

ROOT = Path(__file__).parents[3]
RECIPE = str(ROOT / "recipes" / "local-grpo.toml")


def _run(capsys: pytest.CaptureFixture[str], tmp_path: Path, *sets: str) -> tuple[int, str]:
    args = ["train", "grpo", RECIPE, "--run-dir", str(tmp_path / "run")]
    rc = main([*args, *[a for s in sets for a in ("--set", s)]])
    err = capsys.readouterr().err.strip()
    assert not (tmp_path / "run").exists(), "a run was launched despite the bad input"
    return rc, err


def test_a_recipe_whose_evaluator_checks_nothing_is_refused(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    rc, err = _run(capsys, tmp_path, "evaluator.name=session_completed")
    assert rc == 2 and len(err.splitlines()) == 1
    assert "[evaluator] must check the task" in err and "'session_completed'" in err


def test_a_group_of_one_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, err = _run(capsys, tmp_path, "tasks.num_samples=1")
    assert rc == 2 and "tasks.num_samples is the GRPO group size and must be >= 2, got 1" in err


def test_a_model_dir_the_trainer_cannot_load_is_refused(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="the train extra is not installed")
    empty = tmp_path / "not-a-model"
    empty.mkdir()
    (empty / "config.json").write_text('{"model_type": "no-such-architecture"}')
    rc, err = _run(capsys, tmp_path, f"trainer.model={empty}")
    assert rc == 2 and len(err.splitlines()) == 1
    assert f"trainer.model: cannot load a causal LM and tokenizer from {empty}" in err


@pytest.mark.parametrize(("sets", "says"), [
    (["trainer.loss_type=grpo"], "trainer.loss_norm = 'token' weighs every sampled token the same, but "
                                 "trainer.loss_type = 'grpo' averages each row's tokens first"),
    (["trainer.loss_norm=session", "trainer.loss_type=dr_grpo"], "trainer.loss_type = 'dr_grpo' divides by a "
                                                                 "constant"),
    (["trainer.max_refill_groups=-1"], "trainer.max_refill_groups"),
    (["trainer.loss_norm=rollout"], "trainer.loss_norm"),
    (["trainer.tis_mask=0.5"], "trainer.tis_mask = 0.5 masks tokens whose trainer/rollout ratio is outside"),
    (["trainer.tis_mask=-1"], "trainer.tis_mask"),
    (["trainer.tis_level=row"], "trainer.tis_level"),
])
def test_a_loss_setting_that_does_not_fit_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                     sets: list[str], says: str) -> None:
    rc, err = _run(capsys, tmp_path, *sets)
    assert rc == 2 and len(err.splitlines()) == 1 and says in err, err
