"""The swebench evaluator on real repositories (inflection, six, toolz) in per-instance podman images.

Each case is a session container where the "agent" left the repo as the case says, then a fresh container of
the instance image where the official grading runs: gold → resolved; empty → not; a change that breaks a
PASS_TO_PASS test → not; a patch that does not apply → a clear reason."""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from polar_hpc.config import load_recipe
from polar_hpc.evaluate.base import EvalContext, evaluate_safely
from polar_hpc.evaluate.registry import get_evaluator
from polar_hpc.evaluate.swe_upstream import load
from polar_hpc.evaluate.swegrade import OWN_PARSERS
from polar_hpc.runtime import Runtime, make_runtime
from polar_hpc.tasks.offline_set import INSTANCES
from polar_hpc.tasks.source import task_from_row
from polar_hpc.wire.session import Session, Task
from polar_hpc.wire.traces import TraceStatus, Trajectory

pytestmark = [pytest.mark.container, pytest.mark.slow, pytest.mark.usefixtures("podman_image")]
RECIPE = Path(__file__).parents[3] / "recipes" / "swe-offline-podman.toml"


def task_for(row: dict[str, Any]) -> Task:
    cfg = load_recipe(RECIPE)
    return task_from_row(cfg, row, "offline-swe")


@pytest.fixture
async def runtimes(tmp_path: Path) -> AsyncIterator[Callable[[Task, str], Awaitable[Runtime]]]:
    started: list[Runtime] = []

    async def start(task: Task, name: str) -> Runtime:
        assert task.runtime is not None
        rt = make_runtime(task.runtime, tmp_path / name)
        started.append(rt)
        await rt.start()
        return rt

    yield start
    for rt in started:
        await rt.stop()


def by_id(rows: list[dict[str, Any]], iid: str) -> dict[str, Any]:
    return next(r for r in rows if r["instance_id"] == iid)


async def grade(task: Task, session_rt: Runtime, start: Callable[[Task, str], Awaitable[Runtime]],
                fresh_edit: str | None = None) -> Any:
    async def fresh() -> Runtime:
        rt = await start(task, f"eval-{id(session_rt)}")
        if fresh_edit:
            assert (await rt.exec(fresh_edit)).ok
        return rt

    ctx = EvalContext(session=Session(task=task, sample_index=0), runtime=session_rt, new_runtime=fresh)
    assert task.evaluator is not None
    return await evaluate_safely(get_evaluator(task.evaluator), Trajectory(status=TraceStatus.COMPLETED, traces=[]),
                                 ctx)


async def apply_in(rt: Runtime, patch: str) -> None:
    res = await rt.exec(f"git apply - <<'EOF_P'\n{patch}\nEOF_P")
    assert res.ok, res.stderr


def test_task_set_is_real(offline_swe_tasks: list[dict[str, Any]]) -> None:
    assert len(offline_swe_tasks) == len(INSTANCES) >= 6
    assert len({r["repo"] for r in offline_swe_tasks}) >= 3
    for row in offline_swe_tasks:
        assert row["FAIL_TO_PASS"] and row["PASS_TO_PASS"] and row["solution_patch"].startswith("diff --git")
        assert row["image"] == ("localhost/polar-hpc/sweb.eval.x86_64."
                                f"{row['instance_id'].replace('__', '_1776_')}:latest")


@pytest.mark.parametrize("iid", [i.instance_id for i in INSTANCES])
async def test_gold_patch_is_resolved(offline_swe_tasks, runtimes, iid: str) -> None:  # type: ignore[no-untyped-def]
    row = by_id(offline_swe_tasks, iid)
    task = task_for(row)
    rt = await runtimes(task, "session")
    await apply_in(rt, row["solution_patch"])
    result = await grade(task, rt, runtimes)
    assert result.outcome_reward == 1.0, result.details
    d = result.details
    assert d["resolved"] and d["failed_tests"] == [] and d["grader"] == "swebench 4.1.0"
    assert sorted(d["report"]["FAIL_TO_PASS"]["success"]) == sorted(row["FAIL_TO_PASS"])
    assert d["applied_with"] == "git apply --verbose" and ">>>>> End Test Output" in d["log_tail"]


async def test_empty_patch_is_not_resolved(offline_swe_tasks, runtimes) -> None:  # type: ignore[no-untyped-def]
    task = task_for(offline_swe_tasks[0])
    rt = await runtimes(task, "session")
    result = await grade(task, rt, runtimes)
    assert result.outcome_reward == 0.0 and result.details["reason"] == "empty_patch"


async def test_wrong_fix_fails_its_fail_to_pass_tests(offline_swe_tasks, runtimes) -> None:  # type: ignore[no-untyped-def]
    row = by_id(offline_swe_tasks, "pytoolz__toolz-2")
    task = task_for(row)
    rt = await runtimes(task, "session")
    # a "fix" that silences the KeyError but returns the wrong value
    res = await rt.exec("sed -i 's/    inner\\[k\\] = func(d\\[k\\])/    inner[k] = func(d.get(k))/' "
                        "toolz/dicttoolz.py")
    assert res.ok
    result = await grade(task, rt, runtimes)
    d = result.details
    assert result.outcome_reward == 0.0 and not d["resolved"]
    assert set(d["report"]["FAIL_TO_PASS"]["failure"]) and d["report"]["PASS_TO_PASS"]["failure"] == []


async def test_breaking_a_pass_to_pass_test_is_not_resolved(offline_swe_tasks, runtimes) -> None:  # type: ignore[no-untyped-def]
    row = by_id(offline_swe_tasks, "jpvanhal__inflection-1")
    task = task_for(row)
    rt = await runtimes(task, "session")
    await apply_in(rt, row["solution_patch"])
    # the fix, plus a change that breaks parameterize (PASS_TO_PASS of this instance)
    broken = "python3 - <<'EOF'\nimport re\np='inflection/__init__.py'\ns=open(p).read()\n" \
             "s=s.replace(\"    return string.lower()\\n\\n\\ndef pluralize\", " \
             "\"    return string.upper()\\n\\n\\ndef pluralize\")\n" \
             "open(p,'w').write(s)\nEOF"
    assert (await rt.exec(broken)).ok
    result = await grade(task, rt, runtimes)
    d = result.details
    assert result.outcome_reward == 0.0 and not d["resolved"]
    assert d["report"]["FAIL_TO_PASS"]["failure"] == []
    broken_p2p = d["report"]["PASS_TO_PASS"]["failure"]
    assert broken_p2p and all("parameterize" in t for t in broken_p2p) and set(broken_p2p) <= set(d["failed_tests"])


async def test_patch_that_does_not_apply_has_a_clear_reason(offline_swe_tasks, runtimes) -> None:  # type: ignore[no-untyped-def]
    row = by_id(offline_swe_tasks, "benjaminp__six-2")
    task = task_for(row)
    rt = await runtimes(task, "session")
    await apply_in(rt, row["solution_patch"])
    # the evaluation image's six.py differs from the one the agent edited (another base): nothing can apply
    result = await grade(task, rt, runtimes, fresh_edit="python3 -c \"open('six.py','w').write('# other\\n')\"")
    d = result.details
    assert result.outcome_reward == 0.0 and d["reason"] == "patch_apply_failed"
    assert "does not apply" in d["error"] and "patch --batch --fuzz=5" in d["log_tail"]


async def test_own_parser_agrees_with_swebench_on_real_logs(offline_swe_tasks, runtimes, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The mirror parser and grader read the real eval logs exactly as swebench's do."""
    import msgspec

    from polar_hpc.evaluate.swe_spec import GradingSpec
    from polar_hpc.evaluate.swegrade import eval_script, grade_log

    up = load()
    for row in offline_swe_tasks[::2]:
        task = task_for(row)
        spec = msgspec.convert(row["swe_spec"], GradingSpec)
        rt = await runtimes(task, f"log-{row['instance_id']}")
        (rt.session_dir / "eval.sh").write_text(eval_script(spec))
        res = await rt.exec(f"bash {shlex.quote(rt.sandbox_session_dir)}/eval.sh > "
                            f"{rt.sandbox_session_dir}/eval.log 2>&1")
        log_path = rt.session_dir / "eval.log"
        text = log_path.read_text()
        assert res.ok or ">>>>> End Test Output" in text
        theirs = up.parser(spec.log_parser)(text, None)
        assert OWN_PARSERS[spec.log_parser](text) == theirs and len(theirs) > 10
        for use in (True, False):
            report = grade_log(spec, row["FAIL_TO_PASS"], row["PASS_TO_PASS"], str(log_path), prefer_upstream=use)
            assert not report.resolved and set(report.fail_to_pass["failure"]) == set(row["FAIL_TO_PASS"])
            assert report.pass_to_pass["failure"] == []
