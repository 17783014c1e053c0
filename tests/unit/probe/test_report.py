"""Chain-break explanations of the probe: which message changed and how."""

from __future__ import annotations

import json

import numpy as np
import pytest

from polar_hpc.probe.report import describe_break
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, CompletionRecord, ToolCall, ToolSpec

BASH = ToolSpec(name="bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}})
AGENT = ToolSpec(name="Agent", parameters={"type": "object", "properties": {"prompt": {"type": "string"}}})
SYS = ChatMessage(role="system", content="You are an agent.")
USER = ChatMessage(role="user", content="Fix the failing test in calc.py please.")
CALL = ChatMessage(role="assistant", tool_calls=[ToolCall(id="1", name="bash", arguments='{"command": "cat calc.py"}')])
RESULT = ChatMessage(role="tool", content="def add(a, b):\n    return a - b\n" * 4, tool_call_id="1")


def rec(messages: list[ChatMessage], response: ChatMessage, tools: list[ToolSpec] | None = None,
        index: int = 0) -> CompletionRecord:
    empty = np.zeros(0, dtype=np.int32)
    return CompletionRecord(completion_id=f"c{index}", session_id="s", index=index, provider="openai_chat",
                            canonical=CanonicalRequest(messages=messages, tools=[BASH] if tools is None else tools),
                            prompt_ids=empty, output_ids=empty, output_logprobs=np.zeros(0, dtype=np.float32),
                            finish_reason="stop", response=response)


PARENT = rec([SYS, USER, CALL, RESULT], CALL)
CASES = [
    ("retry", rec([SYS, USER, CALL, RESULT], CALL, index=1), "the same request as call 0 again"),
    ("system", rec([ChatMessage(role="system", content="You are an agent. Today is Monday."), USER, CALL, RESULT, CALL,
                    RESULT], CALL), "message 0 (system): system prompt rewritten"),
    ("truncated", rec([SYS, USER, CALL, ChatMessage(role="tool", content=RESULT.content[:20], tool_call_id="1"), CALL,
                       RESULT], CALL), "message 3 (tool): content truncated"),
    ("compaction", rec([SYS, USER, ChatMessage(role="user", content="Summary: looked at calc.py.")], CALL),
     "compaction: earlier turns replaced; message 2 (assistant)"),
    ("tools", rec([SYS, USER, CALL, RESULT, CALL, RESULT], CALL, tools=[]), "a request without the tools"),
]


@pytest.mark.parametrize("name,new,expected", CASES, ids=[c[0] for c in CASES])
def test_breaks_are_explained(name: str, new: CompletionRecord, expected: str) -> None:
    assert expected in describe_break(PARENT, new)


def test_rewritten_reply_and_sub_agents() -> None:
    thought = ChatMessage(role="assistant", content="", reasoning_content="let me look", tool_calls=CALL.tool_calls)
    parent = rec([SYS, USER], thought)
    rewritten = rec([SYS, USER, ChatMessage(role="assistant", content="x", tool_calls=CALL.tool_calls), RESULT], CALL)
    assert describe_break(parent, rewritten) == "message 2 (assistant): content rewritten (0 -> 1 chars)"
    prompt = "Run the tests of calc.py and report which fail."
    spawn = ChatMessage(role="assistant",
                        tool_calls=[ToolCall(id="2", name="Agent", arguments=json.dumps({"prompt": prompt}))])
    main = rec([SYS, USER], spawn, tools=[AGENT, BASH])
    sub = rec([SYS, ChatMessage(role="user", content=prompt)], CALL)
    assert describe_break(main, sub) == "a sub-agent's own context, started by the parent's Agent tool call"
