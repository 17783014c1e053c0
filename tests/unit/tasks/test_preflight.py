"""Preflight rejects a task set whose images are missing or whose evaluator has nothing to grade with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from polar_hpc.cli.entry import main
from polar_hpc.config import ConfigError, load_recipe
from polar_hpc.launch.preflight import preflight
from polar_hpc.tasks.preflight import task_set_problems

ROOT = Path(__file__).parents[3]
ROWS = ROOT / "tests" / "fixtures" / "swe_rows"


def recipe(tmp_path: Path, tasks: Path, *sets: str):  # type: ignore[no-untyped-def]
    return load_recipe(ROOT / "recipes" / "swe-offline-podman.toml", [f"tasks.path={json.dumps(str(tasks))}", *sets])


@pytest.fixture
def swegym_tasks(tmp_path: Path) -> Path:
    out = tmp_path / "swegym.jsonl"
    assert main(["tasks", "import", "swe-gym", str(ROWS / "swe-gym.jsonl"), "--out", str(out)]) == 0
    return out


def test_apptainer_images_must_be_prepared_into_the_cache(tmp_path: Path, swegym_tasks: Path) -> None:
    from polar_hpc.images.prepare import sif_path

    cfg = recipe(tmp_path, swegym_tasks, 'runtime.backend="apptainer"')
    problems = task_set_problems(cfg)
    assert len(problems) == 1
    assert problems[0].startswith("3 task(s) have no prepared image (getmoto__moto-5752, python__mypy-11220, "
                                  "pydantic__pydantic-5021): prepare them into runtime.image_cache")
    cache = tmp_path / "sif"
    cache.mkdir()
    rows = [json.loads(line) for line in swegym_tasks.read_text().splitlines()]
    for row in rows[:2]:
        sif_path(cache, row["image"]).write_bytes(b"SIF")
    cfg = recipe(tmp_path, swegym_tasks, 'runtime.backend="apptainer"', f'runtime.image_cache="{cache}"')
    assert task_set_problems(cfg) == [
        "1 task(s) have no prepared image (pydantic__pydantic-5021): prepare them into runtime.image_cache with "
        "`polar-hpc images prepare RECIPE --cache DIR`"]


def test_swebench_evaluator_without_a_spec_names_the_tasks(tmp_path: Path) -> None:
    tasks = tmp_path / "raw.jsonl"
    rows = [json.loads(line) for line in (ROWS / "swe-bench.jsonl").read_text().splitlines()]
    tasks.write_text("".join(json.dumps({**r, "image": "/nonexistent"}) + "\n" for r in rows))
    cfg = recipe(tmp_path, tasks, 'runtime.backend="bwrap"')
    problems = task_set_problems(cfg)
    assert any(p.startswith("evaluator 'swebench' has nothing to grade 3 task(s) with (django__django-11099, "
                            "astropy__astropy-12907, sympy__sympy-20590)") for p in problems), problems


@pytest.mark.container
def test_podman_images_missing_fail_the_launch_preflight(tmp_path: Path, swegym_tasks: Path,
                                                         podman_image: str) -> None:
    cfg = recipe(tmp_path, swegym_tasks)
    with pytest.raises(ConfigError, match=r"the run cannot start:[\s\S]*3 task\(s\) have no prepared image "
                                          r"\(getmoto__moto-5752, python__mypy-11220, pydantic__pydantic-5021\)"):
        preflight(cfg)


@pytest.mark.container
def test_offline_task_set_passes(tmp_path: Path, offline_swe_tasks: list[dict]) -> None:  # type: ignore[type-arg]
    tasks = tmp_path / "offline.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in offline_swe_tasks))
    assert task_set_problems(recipe(tmp_path, tasks)) == []
