"""Chat records in the conversational shape TRL and ``tokenizer.apply_chat_template`` take as they are.

A message holds ``role``, ``content`` (a string, ``""`` when the model only called tools: templates concatenate
it) and only the other fields it has (no ``null``, no empty ``tool_calls``): templates test for a key's presence
(Llama-3.1: ``'tool_calls' in message``) as often as for its value. Tool-call ``arguments`` are the
JSON object the model wrote, decoded (templates ``tojson`` them; a string would be encoded twice); arguments
that are not a JSON object stay the text the model wrote. Reasoning is ``reasoning_content`` (what the Qwen3,
DeepSeek, GLM and Nemotron templates read). ``tools`` is a list of JSON-schema function dicts::

    {"role": "assistant", "reasoning_content": "...", "tool_calls": [{"id": "c1", "type": "function",
     "function": {"name": "bash", "arguments": {"cmd": "ls"}}}]}
    {"role": "tool", "tool_call_id": "c1", "content": "a.py"}
    tools = [{"type": "function", "function": {"name": "bash", "description": "...", "parameters": {...}}}]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from polar_hpc.wire.calls import ChatMessage, ToolCall, ToolSpec

_DEC = msgspec.json.Decoder()


def call_arguments(text: str) -> dict[str, Any] | str:
    """The arguments object of a tool call; the text itself when it is not a JSON object."""
    try:
        value = _DEC.decode(text)
    except msgspec.DecodeError:
        return text
    return value if isinstance(value, dict) else text


def tool_call(c: ToolCall) -> dict[str, Any]:
    return {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": call_arguments(c.arguments)}}


def chat_message(m: ChatMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.reasoning_content:
        out["reasoning_content"] = m.reasoning_content
    if m.tool_calls:
        out["tool_calls"] = [tool_call(c) for c in m.tool_calls]
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        out["name"] = m.name
    return out


def chat_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    out = []
    for t in tools:
        fn: dict[str, Any] = {"name": t.name}
        if t.description:
            fn["description"] = t.description
        fn["parameters"] = t.parameters or {"type": "object", "properties": {}}
        out.append({"type": "function", "function": fn})
    return out
