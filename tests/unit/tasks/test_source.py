"""Task templates: ``{field}`` takes the row's field, every other brace is the command's own (shell, awk, find),
and a placeholder the row lacks is an error naming the recipe key and the row."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from polar_hpc.cli.entry import main
from polar_hpc.config import ConfigError, load_recipe
from polar_hpc.tasks.source import iter_tasks

ROOT = Path(__file__).parents[3]


def tasks_of(tmp_path: Path, rows: list[dict[str, object]], *sets: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = load_recipe(ROOT / "recipes" / "local-shell.toml", [f"tasks.path={json.dumps(str(path))}", *sets])
    return list(iter_tasks(cfg))


def test_shell_braces_pass_through_and_fields_are_filled(tmp_path: Path) -> None:
    command = ("printf '%s\\n' \"${HOME:+set}\" {n} | awk '{print $1 * 2}' && echo {{n}} && "
               "find {repo} -name x -exec echo {} +")
    (task,) = tasks_of(tmp_path, [{"task_id": "t1", "repo": "calc", "problem": "p {x}", "n": 21}],
                       f"evaluator.command={json.dumps(command)}",
                       'runtime.prepare=["cd ${HOME} && echo {task_id} {repo}"]')
    assert task.evaluator is not None and task.runtime is not None
    assert task.evaluator.command == ("printf '%s\\n' \"${HOME:+set}\" 21 | awk '{print $1 * 2}' && echo {n} && "
                                      "find calc -name x -exec echo {} +")
    assert task.runtime.prepare == ["cd ${HOME} && echo t1 calc"]
    assert task.instruction == "p {x}"  # a value is never parsed as a template
    out = subprocess.run(["bash", "-c", task.evaluator.command.split(" && ")[0]], capture_output=True, text=True,
                         check=True, env={"HOME": "/tmp"})
    assert out.stdout.split() == ["0", "42"]  # "set" * 2 is 0 in awk; 21 * 2


@pytest.mark.parametrize(("key", "value", "placeholder"), [
    ("evaluator.command", '"pytest {test_file}"', "test_file"),
    ("runtime.prepare", '["git init", "cd {checkout}"]', "checkout"),
    ("tasks.template.instruction", '"{problem_statement}"', "problem_statement"),
])
def test_a_missing_field_names_the_recipe_key_and_the_row(tmp_path: Path, key: str, value: str,
                                                           placeholder: str) -> None:
    with pytest.raises(ConfigError) as err:
        tasks_of(tmp_path, [{"task_id": "t1", "repo": "calc", "problem": "p"}], f"{key}={value}")
    where = "runtime.prepare[1]" if key == "runtime.prepare" else key
    assert str(err.value).startswith(f"{where}: placeholder {{{placeholder}}} is not a field of the task row at "
                                     f"{tmp_path / 'tasks.jsonl'}:1 (its fields: problem, recipe_dir, repo, task_id, "
                                     "tasks_dir)")
    assert f"write {{{{{placeholder}}}}} for literal braces, ${{{placeholder}}} for a shell variable" in str(err.value)


def test_launch_names_a_bad_placeholder_before_anything_is_written(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"task_id": "t1", "repo": "calc", "problem": "p"}) + "\n")
    rc = main(["launch", str(ROOT / "recipes" / "local-shell.toml"), "--dry-run", "--run-dir", str(tmp_path / "run"),
               "--set", f"tasks.path={json.dumps(str(path))}", "--set", 'evaluator.command="pytest {tests}"'])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.splitlines()[0] == "polar-hpc: the run cannot start:"
    assert err.splitlines()[1].startswith("  - evaluator.command: placeholder {tests} is not a field of the task row")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 2
    assert not (tmp_path / "run").exists()
