"""``session_completed`` and ``command`` evaluators."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from polar_hpc.evaluate.base import EvalContext, Evaluator, acquire_runtime, zero
from polar_hpc.evaluate.testlog import grade, parse_test_log
from polar_hpc.wire.traces import EvalResult, TraceStatus, Trajectory


class SessionCompletedEvaluator(Evaluator):
    name = "session_completed"
    format_only = True

    async def evaluate(self, trajectory: Trajectory, ctx: EvalContext) -> EvalResult:
        done = trajectory.status == TraceStatus.COMPLETED
        return EvalResult(outcome_reward=1.0 if done else 0.0, details={"status": trajectory.status.name})


def test_lists(spec_f2p: list[str], spec_p2p: list[str], ctx: EvalContext) -> tuple[list[str], list[str]]:
    """FAIL_TO_PASS / PASS_TO_PASS from the spec, else from the task metadata (lists or JSON text, as SWE-bench)."""
    meta: dict[str, Any] = ctx.session.task.metadata if ctx.session is not None else {}

    def pick(given: list[str], key: str) -> list[str]:
        if given:
            return list(given)
        value = meta.get(key, meta.get(key.lower(), []))
        if isinstance(value, str):
            value = json.loads(value) if value.strip() else []
        if not isinstance(value, list):
            raise ValueError(f"task metadata {key}: expected a list of test ids, got {type(value).__name__}")
        return [str(v) for v in value]

    return pick(spec_f2p, "FAIL_TO_PASS"), pick(spec_p2p, "PASS_TO_PASS")


OUTPUT_TAIL = 4000
"""Characters of the test command's output kept in ``details["output_tail"]`` (what the tests printed)."""


def score_tests(output: str, returncode: int, f2p: list[str], p2p: list[str], parse: bool) -> EvalResult:
    tail = output.strip()[-OUTPUT_TAIL:]
    if not (f2p or p2p or parse):
        return EvalResult(outcome_reward=1.0 if returncode == 0 else 0.0,
                          details={"returncode": returncode, "output_tail": tail})
    statuses = parse_test_log(output)
    report = grade(statuses, f2p, p2p)
    return EvalResult(outcome_reward=1.0 if report["resolved"] else 0.0,
                      details={"returncode": returncode, "report": report, "tests_parsed": len(statuses),
                               "output_tail": tail})


class CommandOptions(msgspec.Struct, kw_only=True):
    cwd: str | None = None
    """Where the command runs (default: the runtime's working dir)."""
    parse: bool = False
    """Grade by the test log's per-test results (FAIL_TO_PASS / PASS_TO_PASS) even without test lists."""


class CommandEvaluator(Evaluator):
    """Runs ``spec.command`` (options: ``CommandOptions``) in the session's runtime or a fresh one."""

    name = "command"
    Options = CommandOptions
    options: CommandOptions

    async def evaluate(self, trajectory: Trajectory, ctx: EvalContext) -> EvalResult:
        if not self.spec.command:
            raise ValueError("evaluator 'command' needs evaluator.command (the test command to run)")
        f2p, p2p = test_lists(self.spec.fail_to_pass, self.spec.pass_to_pass, ctx)
        rt, owned = await acquire_runtime(ctx, self.spec.fresh_runtime)
        try:
            res = await rt.exec(["bash", "-c", self.spec.command], timeout_s=self.spec.timeout_s,
                                cwd=self.options.cwd)
        finally:
            if owned:
                await rt.stop()
        if res.timed_out:
            return zero("timeout", timeout_s=self.spec.timeout_s, command=self.spec.command)
        result = score_tests(res.stdout + "\n" + res.stderr, res.returncode, f2p, p2p,
                             self.options.parse)
        result.details["duration_s"] = res.duration_s
        return result
