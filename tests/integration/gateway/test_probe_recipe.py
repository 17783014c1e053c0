"""``polar-hpc probe --recipe``: a user's own task set, in its own layout (its own row fields, workspace dirs and a
grading command with shell braces), probed through its recipe; a gold patch that does not apply is named as such
in the verdict, not graded as a failing test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from polar_hpc.harness.toolchain import PREFIX_ENV
from polar_hpc.probe.report import ProbeRow

pytestmark = [pytest.mark.slow]
REPO = Path(__file__).resolve().parents[3]

GREET = 'def greet(name):\n    return "Hi " + name\n'
GOLD = """diff --git a/greet.py b/greet.py
--- a/greet.py
+++ b/greet.py
@@ -1,2 +1,2 @@
 def greet(name):
-    return "Hi " + name
+    return "Hello, " + name + "!"
"""
STALE = GOLD.replace('-    return "Hi " + name', '-    return "Hey " + name')
RECIPE = """name = "my-tasks"
[runtime]
backend = "bwrap"
host_python = true
prepare = ["git init -q . && git add -A && git -c user.email=me@x -c user.name=me commit -qm base"]
[agent]
harness = "shell"
command = "python3 -m polar_hpc.harness.mini_agent --max-turns 8 {instruction}"
[evaluator]
name = "command"
# awk's braces and ${...} are the shell's; {expect} is the row's
command = '''o=$(python3 -c "import greet; print(greet.greet('Ann'))" | awk '{print $1,$2}'); [ "${o}" = "{expect}" ]'''
timeout_s = 60
[tasks]
path = "mine.jsonl"
[tasks.template]
id = "{name}"
instruction = "{ask}"
workspace = "projects/{folder}"
"""


@pytest.fixture
def my_recipe(tmp_path: Path) -> Path:
    work = tmp_path / "mine"
    (work / "projects" / "greet").mkdir(parents=True)
    (work / "projects" / "greet" / "greet.py").write_text(GREET)
    rows = [{"name": name, "folder": "greet", "ask": "Make greet('Ann') return 'Hello, Ann!'.",
             "expect": "Hello, Ann!", "solution_patch": patch} for name, patch in (("greet", GOLD), ("stale", STALE))]
    (work / "mine.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (work / "my.toml").write_text(RECIPE)
    return work / "my.toml"


def probe(recipe: Path, url: str, out: Path, *extra: str) -> ProbeRow:
    if shutil.which("bwrap") is None:
        pytest.fail("bwrap is not installed (apt-get install bubblewrap); the probe needs it", pytrace=False)
    cmd = [sys.executable, "-m", "polar_hpc", "probe", "shell", "--recipe", str(recipe), "--engine", url,
           "--out", str(out), "--json", *extra]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, f"probe exited {done.returncode}:\n{done.stderr[-4000:]}"
    return msgspec.json.decode(done.stdout.strip().splitlines()[-1], type=ProbeRow)


def test_a_task_set_of_its_own_layout_probes_through_its_recipe(my_recipe: Path, reference_server: Any,
                                                                 tmp_path: Path) -> None:
    row = probe(my_recipe, reference_server.url, tmp_path / "gold")
    why = msgspec.json.encode(row).decode()
    assert row.status == "completed" and row.returncode == 0 and row.calls >= 4, why
    assert row.reward == 1.0 and row.verdict == "", why


def test_a_gold_patch_that_does_not_apply_is_named(my_recipe: Path, reference_server: Any, tmp_path: Path) -> None:
    row = probe(my_recipe, reference_server.url, tmp_path / "stale", "--task-id", "stale")
    why = msgspec.json.encode(row).decode()
    assert row.reward == 0.0, why
    assert row.verdict.startswith("oracle: the gold patch does not apply: error: patch failed: greet.py:1"), why


def test_bad_probe_input_is_one_line(my_recipe: Path, tmp_path: Path) -> None:
    cases = [
        (["shell", "--recipe", str(tmp_path / "nope.toml")], "polar-hpc probe: --recipe "),
        (["shell", "--recipe", str(my_recipe), "--set", 'tasks.path="missing.jsonl"'],
         "polar-hpc probe: tasks.path of the recipe: expected a JSONL file of tasks"),
        (["nosuch", "--recipe", str(my_recipe)], "polar-hpc probe: harness 'nosuch': "),
        (["codex", "--recipe", str(my_recipe)], "polar-hpc probe: harness 'codex': harness CLI `codex`: not in "),
    ]
    # as on a machine without the harness CLIs: an empty Node prefix, only python on PATH
    env = {**os.environ, PREFIX_ENV: str(tmp_path / "no-node"), "PATH": os.path.dirname(sys.executable)}
    for args, start in cases:
        done = subprocess.run([sys.executable, "-m", "polar_hpc", "probe", *args, "--engine", "http://127.0.0.1:9",
                               "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=60, cwd=REPO,
                              env=env)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith(start) and len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
