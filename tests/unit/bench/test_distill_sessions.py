"""``tools/bench/distill_sessions.py``: a session's actions and ending read from its conversation."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools" / "bench"))

from distill_sessions import behaviour  # noqa: E402

from polar_hpc.wire.calls import ChatMessage, ToolCall  # noqa: E402
from polar_hpc.wire.results import SessionResult  # noqa: E402
from polar_hpc.wire.session import SOLUTION_COMMANDS  # noqa: E402
from polar_hpc.wire.traces import EvalResult, Trace, TraceStatus, Trajectory  # noqa: E402

LOOK = "grep -A5 'def f(' m.py"
FIX = "perl -pi -e 's/\\Qx < r\\E/x > r/' m.py"
TEST = "python3 -m pytest -q"


def _session(steps: list[tuple[str, str]], *, status: TraceStatus, reward: float, answer: bool,
             gold: str = FIX) -> SessionResult:
    """A pi-like conversation: one tool call a reply (command, its tool result), then an answer if ``answer``."""
    msgs = [ChatMessage(role="user", content="fix m.py")]
    for i, (command, output) in enumerate(steps):
        call = ToolCall(id=f"c{i}", name="bash", arguments=json.dumps({"command": command}))
        msgs += [ChatMessage(role="assistant", tool_calls=[call]),
                 ChatMessage(role="tool", content=output, tool_call_id=f"c{i}")]
    reply = [ChatMessage(role="assistant", content="Done.")] if answer else []
    empty = np.zeros(0, dtype=np.int32)
    trace = Trace(prompt_ids=empty, response_ids=empty, loss_mask=empty, response_logprobs=np.zeros(0, np.float32),
                  prompt_messages=msgs, response_messages=reply)
    return SessionResult(task_id="t", sample_index=0, trajectory=Trajectory(status=status, traces=[trace]),
                         evaluation=EvalResult(outcome_reward=reward),
                         metadata={SOLUTION_COMMANDS: [gold]})


def test_a_retry_after_a_failing_test_that_then_passes() -> None:
    b = behaviour(_session([(LOOK, "def f"), (FIX, ""), (TEST, "1 failed, 1 passed"), (LOOK, "def f"), (FIX, ""),
                            (TEST, "2 passed in 0.01s")], status=TraceStatus.COMPLETED, reward=1.0, answer=True))
    assert b.actions == ("look", "fix", "test_fail", "look", "fix", "test_pass")
    assert (b.ending, b.passed, b.retried, b.calls) == ("answer_after_pass", True, True, 7)


def test_an_answer_after_a_failing_test_is_not_a_retry() -> None:
    b = behaviour(_session([(LOOK, ""), (FIX, ""), (TEST, "1 failed, 1 passed")], status=TraceStatus.COMPLETED,
                           reward=0.0, answer=True))
    assert (b.ending, b.passed, b.retried) == ("answer_after_fail", False, False)


def test_a_turn_capped_session_reads_the_grade_of_its_workspace() -> None:
    loop = [(LOOK, ""), (FIX, ""), (TEST, "2 passed"), (TEST, "2 passed"), (TEST, "2 passed")]
    fixed = behaviour(_session(loop, status=TraceStatus.TIMEOUT, reward=1.0, answer=False))
    unfixed = behaviour(_session(loop, status=TraceStatus.TIMEOUT, reward=0.0, answer=False))
    assert (fixed.ending, fixed.passed) == ("capped_fixed", False)
    assert (unfixed.ending, unfixed.passed) == ("capped_unfixed", False)


def test_fixes_are_compared_with_the_reference_command() -> None:
    miss = "perl -pi -e 's/\\Qx < r\\E/x < r/' m.py"
    steps = [(LOOK, ""), (miss, ""), (TEST, "1 failed, 1 passed"), (FIX, ""), (TEST, "2 passed")]
    later = behaviour(_session(steps, status=TraceStatus.COMPLETED, reward=1.0, answer=True))
    first = behaviour(_session([(LOOK, ""), (FIX, ""), (TEST, "2 passed")], status=TraceStatus.COMPLETED,
                               reward=1.0, answer=True))
    none = behaviour(_session(steps, status=TraceStatus.COMPLETED, reward=1.0, answer=True, gold="true"))
    assert (later.gold_first, later.gold_later) == (False, True)
    assert (first.gold_first, first.gold_later) == (True, False)
    assert (none.gold_first, none.gold_later) == (False, False)
