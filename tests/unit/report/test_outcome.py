from __future__ import annotations

from typing import Any

import pytest

from polar_hpc.evaluate.gold import GOLD_PATCH
from polar_hpc.evaluate.testlog import grade
from polar_hpc.report.outcome import failure_reason
from polar_hpc.util.units import count, duration
from polar_hpc.wire.results import AgentOutcome
from polar_hpc.wire.traces import EvalResult, TraceStatus


def _why(status: TraceStatus = TraceStatus.COMPLETED, *, error: str | None = None, reward: float = 0.0,
         details: dict[str, Any] | None = None, agent: AgentOutcome | None = None,
         finish: tuple[str, ...] = ("stop",), evaluated: bool = True) -> str | None:
    ev = EvalResult(outcome_reward=reward, details=details or {}) if evaluated else None
    return failure_reason(status=int(status), error=error, evaluation=ev, reward=reward, accept=1.0,
                          agent=agent, finish_reasons=list(finish))


def test_failure_reasons_say_what_happened() -> None:
    assert _why(reward=1.0) is None
    report = grade({"a::t1": "FAILED", "a::t2": "PASSED", "a::t3": "ERROR", "a::t4": "FAILED", "a::t5": "FAILED"},
                   ["a::t1", "a::t3", "a::t4", "a::t5"], ["a::t2"])
    assert _why(details={"returncode": 1, "report": report}) == "tests still failing: a::t1, a::t3, a::t4 (+1)"
    broke = grade({"a::t1": "PASSED", "a::t2": "FAILED"}, ["a::t1"], ["a::t2"])
    assert _why(details={"report": broke}) == "tests broken: a::t2"
    assert _why(details={"reason": "patch_apply_failed", "stderr": "error: corrupt patch at line 3\n"}) \
        == "evaluator: patch_apply_failed (error: corrupt patch at line 3)"
    assert _why(details={"returncode": 2}) == "test command exited 2"
    assert _why(details={"returncode": 1, GOLD_PATCH: "the gold patch does not apply: error: patch failed: a.py:3"}) \
        == "oracle: the gold patch does not apply: error: patch failed: a.py:3"
    assert _why(details={"returncode": 2}, finish=("stop", "length")) \
        == "test command exited 2; last reply cut at the token limit"
    assert _why(evaluated=False) == "not evaluated"
    assert _why(reward=0.5) == "reward 0.5 below 1"
    assert _why(TraceStatus.TIMEOUT, error="agent timed out after 1200 s\ntrace") \
        == "timeout: agent timed out after 1200 s"
    assert _why(TraceStatus.ERROR, error="harness failed", agent=AgentOutcome(
        status="failed", returncode=127, detail="harness exited 127: not found")) \
        == "harness exited 127: harness exited 127: not found"
    assert _why(TraceStatus.ERROR, error="evaluation failed: runtime did not start") \
        == "evaluation error: runtime did not start"
    assert _why(TraceStatus.ERROR, reward=1.0) == "error: no error text"


@pytest.mark.parametrize(("seconds", "text"), [(4.327e-06, "4.33 µs"), (0.0043, "4.3 ms"), (2.5, "2.5 s"),
                                                (75.0, "1.25 min"), (7200.0, "2 h"), (0.0, "0 s"),
                                                (None, "n/a"), (float("nan"), "n/a")])
def test_durations_in_human_units(seconds: float | None, text: str) -> None:
    assert duration(seconds) == text


def test_counts() -> None:
    assert count(1234567) == "1,234,567" and count(3.0) == "3" and count(2.5) == "2.5"
    assert count(13712.4) == "13,712" and count(0.6667) == "0.667"
