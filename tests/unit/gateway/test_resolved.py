"""A session's task is resolved once, when the rank accepts it: unset specs come from the recipe, set ones stay."""

from __future__ import annotations

from polar_hpc.config.run import AgentSpec, EvaluatorSpec, GatewayConfig, RunConfig
from polar_hpc.wire.resolved import ResolvedSession, resolve_session, resolve_task
from polar_hpc.wire.session import Session, Task


def test_unset_specs_come_from_the_recipe() -> None:
    cfg = RunConfig(agent=AgentSpec(harness="codex"), evaluator=EvaluatorSpec(name="command", command="true"),
                    gateway=GatewayConfig(session_timeout_s=77.0))
    task = resolve_task(Task(task_id="t", instruction="x", metadata={"k": 1}), cfg)
    assert (task.runtime, task.agent, task.builder, task.evaluator) == (cfg.runtime, cfg.agent, cfg.builder,
                                                                         cfg.evaluator)
    assert task.timeout_s == 77.0
    assert (task.task_id, task.instruction, task.metadata) == ("t", "x", {"k": 1})


def test_a_tasks_own_specs_win() -> None:
    own = Task(task_id="t", instruction="x", agent=AgentSpec(harness="pi"), timeout_s=5.0)
    task = resolve_task(own, RunConfig())
    assert task.agent.harness == "pi" and task.timeout_s == 5.0
    assert task.evaluator == RunConfig().evaluator


def test_resolving_twice_changes_nothing() -> None:
    s = resolve_session(Session(task=Task(task_id="t", instruction="x"), sample_index=2, attempt=1), RunConfig())
    assert isinstance(s, ResolvedSession) and (s.session_id, s.policy_version) == ("t/2#1", 0)
    other = RunConfig(gateway=GatewayConfig(session_timeout_s=1.0))
    assert resolve_session(s, other) is s
