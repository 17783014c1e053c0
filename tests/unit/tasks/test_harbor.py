"""Harbor task folders → task rows: instruction, image from the Dockerfile, solve.sh as the oracle's commands,
timeouts and resources from task.toml; a folder that is not a Harbor task is one line naming it; the reward file
read as Harbor reads it; spython's Apptainer definition of our Dockerfiles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import msgspec
import pytest

from polar_hpc.cli.entry import main
from polar_hpc.config import load_recipe
from polar_hpc.evaluate.harbor import read_reward
from polar_hpc.images.prepare import apptainer_definition, base_images, jobs_from_rows
from polar_hpc.tasks.harbor import HARBOR_KEY, HarborError, bwrap_layout, import_harbor, read_task
from polar_hpc.tasks.source import iter_tasks
from polar_hpc.wire.session import Task

TASKS = Path(__file__).parents[2] / "fixtures" / "harbor"
RECIPES = Path(__file__).parents[3] / "recipes"


def test_a_task_folder_becomes_a_row() -> None:
    row = read_task(TASKS / "hello-file")
    assert row["task_id"] == "hello-file"
    assert row["instruction"] == "Create the file /app/hello.txt whose only line is: Hello, world!"
    assert row["image"].startswith("localhost/polar-harbor/hello-file:") and len(row["image"].split(":")[1]) == 12
    assert row["image_containerfile"] == str(TASKS.resolve() / "hello-file" / "environment" / "Dockerfile")
    assert row["solution_commands"] == [(TASKS / "hello-file" / "solution" / "solve.sh").read_text()]
    assert row["harbor"] == {"task_dir": str(TASKS.resolve() / "hello-file"), "name": "polar/hello-file",
                             "agent_timeout_s": 120.0, "verifier_timeout_s": 60.0, "cpus": 1.0, "memory_gb": 1.0,
                             "workdir": "/app", "uploads": [], "needs_image": None}
    assert read_task(TASKS / "csv-total")["harbor"]["workdir"] == "/app"  # [environment].workdir over WORKDIR /srv
    (job,) = jobs_from_rows([row])
    assert (job.ref, job.containerfile, job.context) == (row["image"], row["image_containerfile"],
                                                         row["image_context"])


def test_import_of_a_data_set_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "tasks.jsonl"
    assert main(["tasks", "import", "harbor", str(TASKS), "--out", str(out)]) == 0
    assert [json.loads(line)["task_id"] for line in out.read_text().splitlines()] == ["csv-total", "fix-sum",
                                                                                        "hello-file", "word-count"]
    assert capsys.readouterr().out.startswith(f"4 tasks → {out}")


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


@pytest.mark.parametrize(("environment", "memory_mb"), [
    ('memory = "2G"', 2048), ('memory = "512M"', 512), ('memory = "1.5G"\nmemory_mb = 1536', 1536)])
def test_the_older_memory_field_reads_as_harbor_reads_it(tmp_path: Path, environment: str, memory_mb: int) -> None:
    task = tmp_path / "t"
    shutil.copytree(TASKS / "hello-file", task)
    (task / "task.toml").write_text(f"[environment]\n{environment}\n")
    assert read_task(task)[HARBOR_KEY]["memory_gb"] * 1024 == memory_mb  # tools/harbor_crosscheck.py: harbor agrees


@pytest.mark.parametrize(("environment", "message"), [
    ('memory = "2 gigs"', "memory must be a size like '2G' or '512M', got '2 gigs'"),
    ('memory = "2G"\nmemory_mb = 1024', "memory = '2G' \\(2048 MB\\) and memory_mb = 1024 disagree")])
def test_a_bad_memory_field_names_the_file(tmp_path: Path, environment: str, message: str) -> None:
    task = tmp_path / "t"
    shutil.copytree(TASKS / "hello-file", task)
    (task / "task.toml").write_text(f"[environment]\n{environment}\n")
    with pytest.raises(HarborError, match=r"task.toml \[environment\]: " + message):
        read_task(task)


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


def _tasks(tmp_path: Path, recipe: str, *folders: Path) -> list[Task]:
    out = tmp_path / "tasks.jsonl"
    import_harbor(list(folders) or [TASKS], out)
    return list(iter_tasks(load_recipe(RECIPES / recipe, [f"tasks.path={json.dumps(str(out))}"])))


def test_task_toml_timeouts_and_resources_are_applied(tmp_path: Path) -> None:
    cfg = load_recipe(RECIPES / "harbor-podman.toml")
    by_id = {t.task_id: t for t in _tasks(tmp_path, "harbor-podman.toml")}
    hello, csv, fix = by_id["hello-file"], by_id["csv-total"], by_id["fix-sum"]
    assert hello.runtime is not None and hello.evaluator is not None and csv.runtime is not None
    assert hello.agent_timeout_s == 120.0 and hello.evaluator.timeout_s == 60.0  # [agent] / [verifier] timeout_sec
    assert (hello.runtime.cpus, hello.runtime.memory_gb) == (1.0, 1.0)  # [environment] cpus, memory_mb 1024
    assert (csv.runtime.cpus, csv.runtime.memory_gb) == (cfg.runtime.cpus, cfg.runtime.memory_gb)  # none: the recipe's
    assert csv.agent_timeout_s == cfg.gateway.agent_timeout_s and csv.evaluator.timeout_s == 600.0  # Harbor's default
    assert hello.timeout_s == csv.timeout_s == cfg.gateway.session_timeout_s  # a shorter agent budget: the same
    longer = fix.agent_timeout_s
    assert longer is not None and fix.timeout_s is not None
    slow = load_recipe(RECIPES / "harbor-podman.toml", ["gateway.agent_timeout_s=100"])
    assert fix.timeout_s == cfg.gateway.session_timeout_s
    (fix100,) = [t for t in iter_tasks(msgspec.structs.replace(slow, tasks=msgspec.structs.replace(
        slow.tasks, path=str(tmp_path / "tasks.jsonl")))) if t.task_id == "fix-sum"]
    assert fix100.timeout_s == slow.gateway.session_timeout_s + longer - 100  # the session grows by what it adds
    assert [t.runtime.scratch_dirs for t in by_id.values() if t.runtime] == [[]] * 4  # a container's root is writable


def test_bwrap_gets_folders_of_its_own_and_the_copied_files(tmp_path: Path) -> None:
    by_id = {t.task_id: t for t in _tasks(tmp_path, "harbor-bwrap.toml")}
    csv, hello = by_id["csv-total"].runtime, by_id["hello-file"].runtime
    assert csv is not None and hello is not None
    assert csv.scratch_dirs == ["/app", "/logs", "/tests"] and csv.workdir == "/app"
    assert csv.uploads == [f"{TASKS.resolve()}/csv-total/environment/data.csv:/app/data.csv"]
    assert (hello.cpus, hello.memory_gb, hello.image) == (None, None, None)  # bwrap has no limits, no image


def test_a_solution_with_more_files_runs_from_slash_solution() -> None:
    row = read_task(TASKS / "word-count")
    assert row["solution_dir"] == str(TASKS.resolve() / "word-count" / "solution")
    assert row["solution_commands"] == ["chmod +x /solution/solve.sh && /solution/solve.sh"]
    assert "solution_dir" not in read_task(TASKS / "hello-file")  # solve.sh alone: its own text is the command


@pytest.mark.parametrize(("dockerfile", "reason"), [
    ("FROM localhost/polar-hpc/swe-base:bookworm\nRUN pip install numpy\n",
     "Dockerfile line 2: RUN pip install numpy (bwrap has no image to run or set it in)"),
    ("FROM docker.io/library/python:3.11-slim\n",
     "Dockerfile line 1: FROM docker.io/library/python:3.11-slim (bwrap stands in only for "
     "localhost/polar-hpc/swe-base:bookworm)"),
    ("FROM localhost/polar-hpc/swe-base:bookworm\nCOPY data.csv /etc/data.csv\n",
     "Dockerfile line 2: COPY data.csv /etc/data.csv (bwrap's system folders and / are read-only)"),
    ("FROM localhost/polar-hpc/swe-base:bookworm\nWORKDIR /app\nCOPY --chown=1000 data.csv .\n",
     "Dockerfile line 3: COPY --chown=1000 data.csv . (bwrap copies plain files of the build context only)"),
    ("FROM localhost/polar-hpc/swe-base:bookworm\nENV \\\n  A=1\n",
     "Dockerfile line 2: ENV A=1 (bwrap has no image to run or set it in)"),
])
def test_a_task_that_needs_its_image_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           dockerfile: str, reason: str) -> None:
    task = tmp_path / "tasks" / "needs-image"
    shutil.copytree(TASKS / "csv-total", task)
    (task / "environment" / "Dockerfile").write_text(dockerfile)
    row = read_task(task)
    assert row["harbor"]["needs_image"] == reason and row["harbor"]["uploads"] == []
    out = tmp_path / "tasks.jsonl"
    import_harbor([task], out)
    rc = main(["launch", str(RECIPES / "harbor-bwrap.toml"), "--dry-run", "--run-dir", str(tmp_path / "run"),
               "--set", f"tasks.path={json.dumps(str(out))}"])
    err = capsys.readouterr().err
    assert rc == 2 and "Traceback" not in err, err
    assert err.splitlines()[1] == (f"  - {out}:1: harbor task needs-image needs its image, bwrap cannot stand in for "
                                   f"it: {reason}; run it with runtime.backend = \"podman\""), err
    assert not (tmp_path / "run").exists()


def test_copies_into_folders_land_where_docker_puts_them(tmp_path: Path) -> None:
    env = tmp_path / "environment"
    (env / "src").mkdir(parents=True)
    for name in ("a.txt", "b.txt", "src/m.py"):
        (env / name).write_text(name)
    (env / "Dockerfile").write_text("FROM localhost/polar-hpc/swe-base:bookworm\n# a comment\nWORKDIR /work\n"
                                    "COPY a.txt b.txt /data/\nCOPY src ./lib\nADD a.txt /work/renamed.txt\n")
    uploads, why = bwrap_layout(env / "Dockerfile")
    assert why is None
    assert uploads == [f"{env}/a.txt:/data/a.txt", f"{env}/b.txt:/data/b.txt", f"{env}/src:/work/lib",
                       f"{env}/a.txt:/work/renamed.txt"]
