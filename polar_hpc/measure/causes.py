"""Why a sampled session did not pass, in the few causes an evaluation counts (from what its shard holds).

``timeout`` and ``error`` come from the session's status. A completed session that did not pass is read from the
model's own replies in its traces: ``wrong_edit`` when some reply made an action the harness ran (a tool call, or
for a text-action harness exactly one fenced block of its format) and the tests still fail; ``parse_error`` when
no reply made one but some tried (a tool call that did not parse, tool-call markup left in the text, a fenced
block the harness does not take); ``no_tool_call`` when the model only wrote prose.
"""

from __future__ import annotations

from typing import Literal, get_args

from polar_hpc.config.run import ACCEPT_REWARD
from polar_hpc.wire.actions import ActionFormat
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import TraceStatus, is_accepted

Cause = Literal["passed", "no_tool_call", "parse_error", "wrong_edit", "timeout", "error"]
CAUSES: tuple[Cause, ...] = get_args(Cause)
FAILURES: tuple[Cause, ...] = CAUSES[1:]
FENCE = "```"


def _actions(result: SessionResult, fmt: ActionFormat) -> tuple[int, int]:
    """(replies with an action the harness ran, replies that tried one and failed to parse)."""
    acted = tried = 0
    for trace in result.trajectory.traces:
        unparsed = len(trace.meta.unparsed_tool_calls)
        tried += unparsed
        for msg in trace.response_messages:
            if msg.role != "assistant":
                continue
            if fmt.kind == "text":
                blocks = fmt.text_actions(msg.content)
                if len(blocks) == 1:
                    acted += 1
                elif blocks or FENCE in msg.content:
                    tried += 1
            elif msg.tool_calls:
                acted += 1
    return acted, tried


def cause_of(result: SessionResult, fmt: ActionFormat, accept: float = ACCEPT_REWARD) -> Cause:
    """The session's cause (``passed`` when it completed with a reward of at least ``accept``)."""
    status = result.trajectory.status
    if status == TraceStatus.TIMEOUT:
        return "timeout"
    if status == TraceStatus.ERROR:
        return "error"
    if is_accepted(status, result.reward, accept):
        return "passed"
    acted, tried = _actions(result, fmt)
    if acted:
        return "wrong_edit"
    return "parse_error" if tried else "no_tool_call"
