"""``polar-hpc tasks generate``: seeded and deterministic, the counts asked for, held-out names and values no
train task has (read back from the written files), every gold command fixes its repository and every unmodified
repository fails exactly its FAIL_TO_PASS test; the committed ``recipes/tasks/distill`` is what the generator
writes with its defaults."""

from __future__ import annotations

import ast
import builtins
import filecmp
import json
import subprocess
import sys
import types
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from polar_hpc.cli.entry import main
from polar_hpc.tasks.family import BUG_KINDS
from polar_hpc.tasks.generate import DEFAULT_COUNTS, REPOS, generate, instances

ROOT = Path(__file__).parents[3]
COMMITTED = ROOT / "recipes" / "tasks" / "distill"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gen") / "distill"
    generate(out)
    return out


def rows(out: Path, split: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / f"{split}.jsonl").read_text().splitlines()]


def test_counts_kinds_and_the_committed_copy(generated: Path) -> None:
    train, held = rows(generated, "train"), rows(generated, "heldout")
    assert (len(train), len(held)) == (DEFAULT_COUNTS["train"], DEFAULT_COUNTS["heldout"]) == (300, 100)
    assert len({r["task_id"] for r in train + held}) == 400
    assert sorted(p.name for p in (generated / REPOS).iterdir()) == sorted(r["repo"] for r in train + held)
    for split in (train, held):
        kinds = Counter(r["bug"] for r in split)
        assert set(kinds) == set(BUG_KINDS) and min(kinds.values()) >= len(split) // len(BUG_KINDS) - 1
    lines = Counter(r["solution_commands"][0].split("'")[1] for r in train)
    assert len(lines) > 250, "the fixed lines vary"
    def tree(root: Path) -> dict[str, str]:
        return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}

    assert tree(generated) == tree(COMMITTED), "regenerate: polar-hpc tasks generate --out recipes/tasks/distill"


def test_same_seed_same_files_other_seed_other_tasks(tmp_path: Path, generated: Path) -> None:
    generate(tmp_path / "a", train=30, heldout=10)
    generate(tmp_path / "b", seed=7, train=30, heldout=10)
    assert (tmp_path / "a" / "train.jsonl").read_text().splitlines() == \
        (generated / "train.jsonl").read_text().splitlines()[:30]
    assert (tmp_path / "a" / "train.jsonl").read_text() != (tmp_path / "b" / "train.jsonl").read_text()
    generate(tmp_path / "a", seed=7, train=30, heldout=10)  # a folder it wrote is rewritten, stale repos gone
    assert filecmp.dircmp(tmp_path / "a", tmp_path / "b").diff_files == []
    assert len(list((tmp_path / "a" / REPOS).iterdir())) == 40


def _identifiers_and_values(repo: Path) -> tuple[set[str], set[int]]:
    names: set[str] = set()
    values: set[int] = set()
    for path in repo.glob("*.py"):
        names.add(path.stem.removeprefix("test_"))
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                names.add(node.name.removeprefix("test_"))
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.alias):
                names.add(node.name)
        in_code = [tree] if not path.stem.startswith("test_") else \
            [a for n in ast.walk(tree) if isinstance(n, ast.Call) for a in n.args]  # the tests' call arguments
        values |= {n.value for t in in_code for n in ast.walk(t)
                   if isinstance(n, ast.Constant) and type(n.value) is int}
    return names - set(dir(builtins)), values - {0, 1}


def test_heldout_names_and_values_are_not_in_train(generated: Path) -> None:
    seen: dict[str, tuple[set[str], set[int]]] = {"train": (set(), set()), "heldout": (set(), set())}
    for split, (names, values) in seen.items():
        for r in rows(generated, split):
            n, v = _identifiers_and_values(generated / REPOS / r["repo"])
            names |= n
            values |= v
    (tn, tv), (hn, hv) = seen["train"], seen["heldout"]
    assert len(hn) > 50 and len(hv) > 10
    assert tn & hn == set()
    assert tv & hv == set()
    words = {w for n in tn for w in n.split("_")} & {w for n in hn for w in n.split("_")} - {""}
    assert words <= {"q", "v"}, words  # parts of floor_q / tally_v: the whole names differ


def _load(repo: Path, module: str, source: str) -> types.ModuleType:
    mod = types.ModuleType(module)
    exec(compile(source, str(repo / f"{module}.py"), "exec"), mod.__dict__)
    return mod


def _test_results(repo: Path, source: str) -> dict[str, bool]:
    """``file::test -> passed``: the repository's tests run in this process against ``source`` as the module."""
    (test_file,) = repo.glob("test_*.py")
    module = test_file.stem.removeprefix("test_")
    sys.modules[module] = _load(repo, module, source)
    try:
        space: dict[str, Any] = {}
        exec(compile(test_file.read_text(), str(test_file), "exec"), space)
        out = {}
        for name, fn in space.items():
            if name.startswith("test_"):
                try:
                    fn()
                except AssertionError:
                    out[f"{test_file.name}::{name}"] = False
                else:
                    out[f"{test_file.name}::{name}"] = True
        return out
    finally:
        del sys.modules[module]


def test_gold_fixes_every_repo_and_the_unmodified_repo_fails_f2p(generated: Path, tmp_path: Path) -> None:
    every = rows(generated, "train") + rows(generated, "heldout")
    work = tmp_path / "work"
    subprocess.run(["cp", "-r", str(generated / REPOS), str(work)], check=True)
    script = "set -e\n" + "".join(f"cd {work / r['repo']}\n{chr(10).join(r['solution_commands'])}\n" for r in every)
    subprocess.run(["bash", "-c", script], check=True)  # every gold command, as the sandbox runs them: one bash
    for r in every:
        (mod,) = r["solution_files"]
        before = _test_results(generated / REPOS / r["repo"], (generated / REPOS / r["repo"] / mod).read_text())
        after = _test_results(generated / REPOS / r["repo"], (work / r["repo"] / mod).read_text())
        assert set(before) == set(r["FAIL_TO_PASS"]) | set(r["PASS_TO_PASS"]), r["task_id"]
        assert [before[t] for t in r["FAIL_TO_PASS"]] == [False], r["task_id"]
        assert all(before[t] for t in r["PASS_TO_PASS"]), r["task_id"]
        assert all(after.values()), (r["task_id"], r["solution_commands"])
        changed = [a for a, b in zip((generated / REPOS / r["repo"] / mod).read_text().splitlines(),
                                     (work / r["repo"] / mod).read_text().splitlines(), strict=True) if a != b]
        assert len(changed) == 1 and changed[0].strip() not in r["problem"], r["task_id"]  # the line is not given
        assert mod in r["problem"] and len(r["solution_commands"]) == 1 and len(r["solution_commands"][0]) < 140


def test_a_first_try_misses_and_leaves_the_repository_as_it_was(generated: Path, tmp_path: Path) -> None:
    """``Instance.first_try`` (a recovery demonstration's first fix): another line of the broken function, replaced
    by itself, so the repository is byte for byte the same and FAIL_TO_PASS still fails."""
    work = tmp_path / "work"
    subprocess.run(["cp", "-r", str(generated / REPOS), str(work)], check=True)
    insts = instances("train", DEFAULT_COUNTS["train"]) + instances("heldout", DEFAULT_COUNTS["heldout"])
    assert all(i.first_try.startswith("perl -pi -e ") for i in insts)
    assert all(i.first_try != i.row["solution_commands"][0] for i in insts)
    script = "set -e\n" + "".join(f"cd {work / i.row['repo']}\n{i.first_try}\n" for i in insts)
    subprocess.run(["bash", "-c", script], check=True)
    assert not filecmp.dircmp(generated / REPOS, work).diff_files
    for i in insts:
        (mod,) = i.row["solution_files"]
        assert (work / i.row["repo"] / mod).read_text() == (generated / REPOS / i.row["repo"] / mod).read_text()


def test_pytest_reads_the_ids_the_rows_name(generated: Path) -> None:
    """The grader's own view: pytest -rA in an unmodified repository fails F2P, passes P2P."""
    r = rows(generated, "heldout")[0]
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"],
                         cwd=generated / REPOS / r["repo"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stdout
    assert f"FAILED {r['FAIL_TO_PASS'][0]}" in res.stdout and f"PASSED {r['PASS_TO_PASS'][0]}" in res.stdout


def test_bad_output_folder_and_counts_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    assert main(["tasks", "generate", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds other files" in err and str(tmp_path) in err
    assert (tmp_path / "mine.txt").read_text() == "keep me"
    assert main(["tasks", "generate", "--out", str(tmp_path / "new"), "--heldout", "0"]) == 2
    assert "--heldout must be >= 1, got 0" in capsys.readouterr().err
