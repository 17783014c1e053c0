"""Names and values of submitted tasks are checked before anything runs: the coordinator, RunClient."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar_hpc.config import ConfigError
from polar_hpc.config.run import AgentSpec, BuilderSpec, EvaluatorSpec, RuntimeSpec
from polar_hpc.coordinator.client import RunClient
from polar_hpc.evaluate.registry import EVALUATORS
from polar_hpc.harness import ADAPTERS
from polar_hpc.runtime import BACKENDS
from polar_hpc.tasks.validate import task_problems
from polar_hpc.wire.session import Task


def _task(**kw: object) -> Task:
    return Task(task_id="t1", instruction="do it", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(("task", "expected"), [
    (_task(agent=AgentSpec(harness="kodex")),
     f"task 't1': agent.harness = 'kodex': unknown harness (known: {', '.join(ADAPTERS)})"),
    (_task(agent=AgentSpec(harness="shell")),
     "task 't1': agent.command: the shell harness needs a command, e.g. \"python agent.py {instruction}\""),
    (_task(builder=BuilderSpec(name="prefix_merge")),
     "task 't1': builder.name = 'prefix_merge': unknown builder 'prefix_merge': known builders are "
     "per_request, prefix_merging (or give a 'module:Class' path)"),
    (_task(builder=BuilderSpec(name="nosuch.module:Builder")),
     "task 't1': builder.name = 'nosuch.module:Builder': builder 'nosuch.module:Builder': cannot load "
     "'nosuch.module:Builder': No module named 'nosuch'"),
    (_task(evaluator=EvaluatorSpec(name="unit_tests")),
     "task 't1': evaluator.name = 'unit_tests': unknown evaluator 'unit_tests': known evaluators are "
     f"{', '.join(sorted(EVALUATORS))} (or give a 'module:Class' path)"),
    (_task(runtime=RuntimeSpec(backend="chroot")),  # type: ignore[arg-type]
     "task 't1': runtime.backend = 'chroot': Invalid enum value 'chroot' (valid choices: " +
     ", ".join(repr(b) for b in BACKENDS) + ")"),
    (_task(num_samples=0), "task 't1': num_samples = 0: expected an integer >= 1"),
    (_task(timeout_s=-1.0), "task 't1': timeout_s = -1.0: expected seconds > 0"),
    (_task(agent=AgentSpec(harness="codex", max_turns=0)), "task 't1': agent.max_turns = 0: Expected `int` >= 1"),
    (_task(evaluator=EvaluatorSpec(timeout_s=0)), "task 't1': evaluator.timeout_s = 0: Expected `float` > 0.0"),
])
def test_task_problems_name_field_value_and_choices(task: Task, expected: str) -> None:
    assert task_problems(task) == [expected]


def test_good_task_and_registered_names_pass() -> None:
    assert task_problems(_task()) == []
    for backend in BACKENDS:  # whatever the runtime registry holds is accepted
        assert task_problems(_task(runtime=RuntimeSpec(backend=backend))) == []  # type: ignore[arg-type]
    assert task_problems(_task(builder=BuilderSpec(name="per_request"), evaluator=EvaluatorSpec(name="command"),
                               agent=AgentSpec(harness="pi"))) == []


async def test_run_client_refuses_before_sending(tmp_path: Path) -> None:
    client = RunClient(tmp_path)  # never connected: the check comes first
    with pytest.raises(ConfigError) as info:
        await client.submit([_task(num_samples=0), _task(agent=AgentSpec(harness="kodex"))])
    assert str(info.value) == (
        "task 't1': num_samples = 0: expected an integer >= 1; task 't1': agent.harness = 'kodex': unknown "
        f"harness (known: {', '.join(ADAPTERS)})")


async def test_coordinator_rejects_with_the_reason(tmp_path: Path) -> None:
    from polar_hpc.config import RunConfig
    from polar_hpc.coordinator.server import Coordinator

    coord = Coordinator(RunConfig(recipe_dir=str(tmp_path)), tmp_path / "run", host="127.0.0.1")
    reply = coord.submit([_task(evaluator=EvaluatorSpec(name="unit_tests")),
                          Task(task_id="ok", instruction="x")])
    assert reply.accepted == ["ok"]
    assert reply.rejected == {"t1": "task 't1': evaluator.name = 'unit_tests': unknown evaluator 'unit_tests': "
                                    f"known evaluators are {', '.join(sorted(EVALUATORS))} "
                                    "(or give a 'module:Class' path)"}
