"""``polar-hpc eval`` refuses bad input in one line, exit 2, before anything is launched: a task file with no
tasks, a harness that is not installed here, a model dir the reference server cannot load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polar_hpc.cli.entry import main
from polar_hpc.harness.toolchain import PREFIX_ENV

ROOT = Path(__file__).parents[3]
RECIPE = str(ROOT / "recipes" / "distill-pi.toml")
HELDOUT = ROOT / "recipes" / "tasks" / "distill" / "heldout.jsonl"


def _eval(tmp_path: Path, *args: str) -> list[str]:
    return ["eval", RECIPE, "--runs-dir", str(tmp_path / "runs"), *args]


def _one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert not (tmp_path / "runs").exists(), "nothing may be launched"
    return err


def test_a_task_file_without_tasks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(_eval(tmp_path, "--model", "asset:tiny-qwen3", "--tasks", str(empty))) == 2
    err = _one_line(capsys, tmp_path)
    assert f"--tasks {empty}: the file holds no tasks" in err


def test_a_task_file_whose_workspaces_are_missing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    moved = tmp_path / "heldout.jsonl"
    moved.write_text(HELDOUT.read_text())  # the rows without their repos/ folder next to them
    assert main(_eval(tmp_path, "--model", "asset:tiny-qwen3", "--tasks", str(moved))) == 2
    err = _one_line(capsys, tmp_path)
    assert "100 task(s) have no workspace folder, e.g. 'heldout-0000'" in err and str(tmp_path / "repos") in err


def test_a_harness_not_installed_here(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PREFIX_ENV, str(tmp_path / "no-prefix"))
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    assert main(_eval(tmp_path, "--model", "asset:tiny-qwen3", "--tasks", str(HELDOUT))) == 2
    err = _one_line(capsys, tmp_path)
    assert "agent.harness = 'pi' cannot run here: " in err and "harness pi: pi is not installed" in err
    assert "fix: bash tools/install_harnesses.sh" in err


@pytest.mark.parametrize("files,expected", [
    ({}, "no config.json in"),
    ({"config.json": "{\"model_type\": \"llama\"}", "tokenizer.json": "{}"}, "no weights in"),
    ({"config.json": "{\"model_type\": \"llama\"}", "model.safetensors": "not a header"},
     "is not a readable safetensors file"),
    ({"config.json": "[1]"}, "expected a JSON object, got list"),
])
def test_a_model_dir_the_server_cannot_load(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            files: dict[str, str], expected: str) -> None:
    model = tmp_path / "ckpt"
    model.mkdir()
    for name, text in files.items():
        (model / name).write_text(text)
    assert main(_eval(tmp_path, "--model", str(model), "--tasks", str(HELDOUT))) == 2
    err = _one_line(capsys, tmp_path)
    assert f"--model {model}: the reference server cannot load it: " in err and expected in err


def test_a_real_model_dir_passes_the_check(tmp_path: Path) -> None:
    """The check is the server's: the fetched SmolLM2 asset (what every recipe here serves) has nothing wrong."""
    from polar_hpc.assets import resolve_model
    from polar_hpc.reference.checkpoint import model_dir_problems

    try:
        path = resolve_model("asset:smollm2")
    except Exception as err:  # AssetMissing: not fetched on this machine
        pytest.skip(f"asset smollm2 is not fetched here: {err}")
    assert model_dir_problems(path) == []
    broken = tmp_path / "copy"
    broken.mkdir()
    for f in path.iterdir():
        if f.name != "tokenizer.json":
            (broken / f.name).symlink_to(f)
    (broken / "tokenizer.json").write_text(json.dumps({"model": "nothing"}))
    (problem,) = model_dir_problems(broken)
    assert problem.startswith(f"{broken / 'tokenizer.json'} does not load")


def test_a_users_own_task_file_runs_unchanged() -> None:
    """recipes/tasks/demo.jsonl through the distill recipe: its repositories are found next to it, every session
    sampled, seeded, K samples, the first N tasks."""
    from polar_hpc.measure.checks import eval_config
    from polar_hpc.tasks.source import iter_tasks

    cfg = eval_config(ROOT / "recipes" / "distill-mini.toml", model="asset:tiny-qwen3",
                      tasks=ROOT / "recipes" / "tasks" / "demo.jsonl", samples=3, limit=2, seed=5)
    tasks = list(iter_tasks(cfg))
    assert [t.task_id for t in tasks] == ["calc-add", "fizzbuzz-15"]
    repos = ROOT / "recipes" / "tasks" / "repos"
    assert all(Path(t.workspace or "").is_dir() and Path(t.workspace or "").parent == repos for t in tasks)
    assert {(t.num_samples, t.agent and t.agent.policy, t.agent and t.agent.harness) for t in tasks} == {
        (3, "sample", "mini_swe_agent")}
    assert (cfg.inference.random_seed, cfg.launch.backend) == (5, "local")
