"""Harbor task folders → task rows: instruction, image from the Dockerfile, solve.sh as the oracle's commands,
timeouts and resources from task.toml; a folder that is not a Harbor task is one line naming it; the reward file
read as Harbor reads it; spython's Apptainer definition of our Dockerfiles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from polar_hpc.cli import main
from polar_hpc.evaluate.harbor import read_reward
from polar_hpc.images.prepare import apptainer_definition, base_images, jobs_from_rows
from polar_hpc.tasks.harbor import HarborError, import_harbor, read_task

TASKS = Path(__file__).parents[2] / "fixtures" / "harbor"


def test_a_task_folder_becomes_a_row() -> None:
    row = read_task(TASKS / "hello-file")
    assert row["task_id"] == "hello-file"
    assert row["instruction"] == "Create the file /app/hello.txt whose only line is: Hello, world!"
    assert row["image"].startswith("localhost/polar-harbor/hello-file:") and len(row["image"].split(":")[1]) == 12
    assert row["image_containerfile"] == str(TASKS.resolve() / "hello-file" / "environment" / "Dockerfile")
    assert row["solution_commands"] == [(TASKS / "hello-file" / "solution" / "solve.sh").read_text()]
    assert row["harbor"] == {"task_dir": str(TASKS.resolve() / "hello-file"), "name": "polar/hello-file",
                             "agent_timeout_s": 120.0, "verifier_timeout_s": 60.0, "cpus": 1.0, "memory_gb": 1.0,
                             "workdir": "/app"}
    assert read_task(TASKS / "csv-total")["harbor"]["workdir"] == "/app"  # [environment].workdir over WORKDIR /srv
    (job,) = jobs_from_rows([row])
    assert (job.ref, job.containerfile, job.context) == (row["image"], row["image_containerfile"],
                                                         row["image_context"])


def test_import_of_a_data_set_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tasks.jsonl"
    assert main(["tasks", "import", "harbor", str(TASKS), "--out", str(out)]) == 0
    assert [json.loads(line)["task_id"] for line in out.read_text().splitlines()] == ["csv-total", "fix-sum",
                                                                                        "hello-file"]
    assert capsys.readouterr().out.startswith(f"3 tasks → {out}")


@pytest.mark.parametrize(("remove", "message"), [
    ("instruction.md", "no instruction.md"),
    ("tests", "no tests/test.sh"),
    ("environment", "no environment/Dockerfile"),
])
def test_a_folder_missing_a_part_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], remove: str,
                                             message: str) -> None:
    task = tmp_path / "broken"
    shutil.copytree(TASKS / "hello-file", task)
    target = task / remove
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    rc = main(["tasks", "import", "harbor", str(task), "--out", str(tmp_path / "t.jsonl")])
    err = capsys.readouterr().err
    assert rc == 2 and err == f"polar-hpc tasks import harbor: harbor task {task}: {message} (a Harbor task has " \
                              "task.toml, instruction.md, environment/Dockerfile and tests/test.sh)\n"
    assert not (tmp_path / "t.jsonl").exists()


def test_bad_task_toml_names_the_file(tmp_path: Path) -> None:
    task = tmp_path / "t"
    shutil.copytree(TASKS / "hello-file", task)
    (task / "task.toml").write_text("[verifier]\ntimeout_sec = -3\n")
    with pytest.raises(HarborError, match=r"task.toml \[verifier\]: timeout_sec must be a number > 0, got -3"):
        import_harbor([task], tmp_path / "out.jsonl")
    with pytest.raises(HarborError, match="has no task.toml, nor any folder with one"):
        import_harbor([tmp_path / "t" / "tests"], tmp_path / "out.jsonl")


@pytest.mark.parametrize(("files", "reward"), [
    ({"reward.txt": "1\n"}, 1.0), ({"reward.txt": "0.25"}, 0.25),
    ({"reward.json": '{"reward": 0.5, "other": 3}'}, 0.5), ({"reward.json": '{"accuracy": 1}'}, 1.0),
    ({"reward.json": '{"reward": 1}', "reward.txt": "0"}, 1.0),  # json first, as Harbor
])
def test_reward_read_as_harbor_reads_it(tmp_path: Path, files: dict[str, str], reward: float) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert read_reward(tmp_path) == reward


@pytest.mark.parametrize(("files", "message"), [
    ({}, "test.sh wrote no reward"), ({"reward.txt": ""}, "reward.txt is empty"),
    ({"reward.txt": "yes"}, "reward.txt is not a number: 'yes'"), ({"reward.txt": "nan"}, "not a finite number"),
    ({"reward.json": '{"a": 1, "b": 2}'}, "has no 'reward' among ['a', 'b']"),
])
def test_a_missing_or_bad_reward_is_an_error(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_reward(tmp_path)


def test_base_images_and_apptainer_definition() -> None:
    assert base_images("FROM a:1 AS build\nRUN x\nFROM --platform=x build\nFROM b\n") == ["a:1", "b"]
    text = apptainer_definition(TASKS / "fix-sum" / "environment" / "Dockerfile")
    lines = text.splitlines()
    assert lines[:2] == ["Bootstrap: docker", "From: localhost/polar-hpc/swe-base:bookworm"]
    assert "tally.py /app/tally.py" in lines[lines.index("%files") + 1]
    assert "cd /app" in text
