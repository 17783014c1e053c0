"""Evaluators on a real git repository built here: a failing test, a fix, and patches of every kind."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from polar_hpc.config.base import ConfigError
from polar_hpc.config.run import EvaluatorSpec, RuntimeSpec
from polar_hpc.evaluate.base import EvalContext, apply_rewards, evaluate_safely
from polar_hpc.evaluate.registry import EVALUATORS, get_evaluator
from polar_hpc.runtime import Runtime, make_runtime
from polar_hpc.wire.traces import EvalResult, Trace, TraceStatus, Trajectory

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
TESTS = ("from calc import add, sub\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_sub():\n    assert sub(5, 3) == 2\n")
F2P = ["tests/test_calc.py::test_add"]
P2P = ["tests/test_calc.py::test_sub"]
PYTEST = f"{sys.executable} -m pytest -rA -q -p no:cacheprovider tests"

PATCHES = {
    "correct": ({"calc.py": BUGGY.replace("return a - b\n\n\n", "return a + b\n\n\n", 1)}, 1.0),
    "wrong": ({"calc.py": BUGGY.replace("return a - b\n\n\n", "return a * b\n\n\n", 1)}, 0.0),
    "empty": ({}, 0.0),
    "breaks_pass_to_pass": ({"calc.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return 0\n"}, 0.0),
    "new_file_fix": ({"calc.py": "from calc_impl import add, sub  # noqa\n",
                      "calc_impl.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"},
                     1.0),
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True, timeout=30).stdout


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    repo = tmp_path / "origin"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(BUGGY)
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


async def local_runtime(tmp: Path, origin: Path, name: str, files: dict[str, str] | None = None) -> Runtime:
    work = tmp / name / "work"
    shutil.copytree(origin, work)
    for rel, text in (files or {}).items():
        (work / rel).write_text(text)
    (work / "__pycache__").mkdir(exist_ok=True)
    (work / "__pycache__" / "junk.pyc").write_bytes(b"\0junk")  # caches never enter the patch
    rt = make_runtime(RuntimeSpec(backend="local", workdir=str(work)), tmp / name)
    await rt.start()
    return rt


def one_trace() -> Trajectory:
    import numpy as np

    z = np.zeros(0, dtype=np.int32)
    return Trajectory(status=TraceStatus.COMPLETED, traces=[
        Trace(prompt_ids=z, response_ids=z, loss_mask=z.astype(np.uint8), response_logprobs=z.astype(np.float32))
        for _ in range(2)])


@pytest.mark.parametrize("case", sorted(PATCHES))
async def test_swebench_grades_patches(tmp_path: Path, origin: Path, case: str) -> None:
    files, expected = PATCHES[case]
    session = await local_runtime(tmp_path, origin, "session", files)
    fresh: list[Runtime] = []

    async def new_runtime() -> Runtime:
        rt = await local_runtime(tmp_path, origin, f"fresh{len(fresh)}")
        fresh.append(rt)
        return rt

    spec = EvaluatorSpec(name="swebench", command=PYTEST, fail_to_pass=F2P, pass_to_pass=P2P, timeout_s=120)
    traj = one_trace()
    try:
        result = await evaluate_safely(get_evaluator(spec), traj, EvalContext(runtime=session,
                                                                             new_runtime=new_runtime))
    finally:
        await session.stop()
    assert result.outcome_reward == expected, result.details
    if case == "empty":
        assert result.details["reason"] == "empty_patch" and not fresh
    else:
        assert result.details["applied_with"] == "git-apply"
        assert "__pycache__" not in (fresh[0].session_dir.parent / "fresh0" / "work" / "calc.py").read_text()
    apply_rewards(traj, result)
    assert [t.reward for t in traj.traces] == [expected, expected]


async def test_swebench_falls_back_to_fuzzy_patch(tmp_path: Path, origin: Path) -> None:
    session = await local_runtime(tmp_path, origin, "session", PATCHES["correct"][0])

    async def new_runtime() -> Runtime:  # the fresh checkout drifted: context lines moved, git apply refuses
        return await local_runtime(tmp_path, origin, "fresh", {"calc.py": "# header\n\n" + BUGGY})

    spec = EvaluatorSpec(name="swebench", command=PYTEST, fail_to_pass=F2P, pass_to_pass=P2P)
    try:
        result = await get_evaluator(spec).evaluate(one_trace(), EvalContext(runtime=session,
                                                                             new_runtime=new_runtime))
    finally:
        await session.stop()
    assert result.outcome_reward == 1.0 and result.details["applied_with"] in ("git-apply", "patch-fuzz")


@pytest.mark.parametrize(("files", "expected"), [(PATCHES["correct"][0], 1.0), ({}, 0.0)])
async def test_command_in_session_runtime_with_unittest_ids(tmp_path: Path, origin: Path, files: dict[str, str],
                                                            expected: float) -> None:
    rt = await local_runtime(tmp_path, origin, "session", files)
    (rt.session_dir / "work" / "tests" / "__init__.py").write_text("")
    try:
        # plain functions are not unittest cases: wrap them so unittest finds them
        (rt.session_dir / "work" / "tests" / "test_calc.py").write_text(
            TESTS + "\n\nimport unittest\n\n\nclass test_calc(unittest.TestCase):\n"
                    "    def test_add(self):\n        test_add()\n\n    def test_sub(self):\n        test_sub()\n")
        spec = EvaluatorSpec(name="command", command=f"{sys.executable} -m unittest -v tests.test_calc",
                             fail_to_pass=["test_add (tests.test_calc.test_calc)"],
                             pass_to_pass=["tests.test_calc.test_calc.test_sub"])
        result = await get_evaluator(spec).evaluate(one_trace(), EvalContext(runtime=rt))
    finally:
        await rt.stop()
    assert result.outcome_reward == expected, result.details


async def test_command_exit_code_and_timeout(tmp_path: Path, origin: Path) -> None:
    rt = await local_runtime(tmp_path, origin, "session")
    try:
        ok = await get_evaluator(EvaluatorSpec(name="command", command="true")).evaluate(
            one_trace(), EvalContext(runtime=rt))
        bad = await get_evaluator(EvaluatorSpec(name="command", command="exit 3")).evaluate(
            one_trace(), EvalContext(runtime=rt))
        slow = await get_evaluator(EvaluatorSpec(name="command", command="sleep 30", timeout_s=0.5)).evaluate(
            one_trace(), EvalContext(runtime=rt))
    finally:
        await rt.stop()
    assert (ok.outcome_reward, bad.outcome_reward, slow.outcome_reward) == (1.0, 0.0, 0.0)
    assert bad.details["returncode"] == 3 and slow.details["reason"] == "timeout"


async def test_session_completed_and_registry() -> None:
    ev = get_evaluator(EvaluatorSpec(name="session_completed"))
    assert (await ev.evaluate(one_trace(), EvalContext())).outcome_reward == 1.0
    timed_out = Trajectory(status=TraceStatus.TIMEOUT)
    assert (await ev.evaluate(timed_out, EvalContext())).outcome_reward == 0.0
    with pytest.raises(ConfigError, match=f"known evaluators are {', '.join(sorted(EVALUATORS))}"):
        get_evaluator(EvaluatorSpec(name="pytest"))


def test_trace_rewards_must_match_traces() -> None:
    traj = one_trace()
    apply_rewards(traj, EvalResult(outcome_reward=1.0, trace_rewards=[0.25, 0.5]))
    assert [t.reward for t in traj.traces] == [0.25, 0.5]
    with pytest.raises(ValueError, match="1 trace rewards for 2 traces"):
        apply_rewards(traj, EvalResult(outcome_reward=1.0, trace_rewards=[1.0]))
