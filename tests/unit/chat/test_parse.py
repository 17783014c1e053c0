"""Reasoning and tool-call parsing of sampled text."""

from __future__ import annotations

import json

import pytest

from polar_hpc.chat.parse import parse_reply
from polar_hpc.wire.calls import ToolSpec

TOOLS = [ToolSpec(name="edit", parameters={"type": "object", "properties": {
    "path": {"type": "string"}, "line": {"type": "integer"}, "force": {"type": "boolean"},
    "opts": {"type": "object"}, "ratio": {"type": "number"}}})]

QWEN = [
    ("plain", "Hello.", None, "Hello.", []),
    ("think then text", "<think>\nhmm\n</think>\n\nHi", "hmm", "Hi", []),
    ("closed-only think (prompt opened it)", "why\n</think>\n\nok", "why", "ok", []),
    ("unclosed think before a tool call",
     '<think>\nplan\n<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>', "plan", "", [("a", {"x": 1})]),
    ("unclosed think, no call (cut by length)", "<think>\nstill going", "still going", "", []),
    ("two calls with text",
     'Doing it.\n<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n'
     '<tool_call>\n{"name": "b", "arguments": "{\\"y\\": 2}"}\n</tool_call>',
     None, "Doing it.", [("a", {}), ("b", {"y": 2})]),
]


@pytest.mark.parametrize("name,text,reasoning,content,calls", QWEN, ids=[c[0] for c in QWEN])
def test_qwen(name: str, text: str, reasoning: str | None, content: str, calls: list) -> None:  # type: ignore[type-arg]
    p = parse_reply(text, "qwen", TOOLS)
    assert p.parse_error is None
    assert p.reasoning == reasoning and p.content == content
    assert [(c.name, json.loads(c.arguments)) for c in p.tool_calls] == calls
    assert all(c.id.startswith("call_") for c in p.tool_calls)


@pytest.mark.parametrize("text", [
    '<tool_call>\n{"name": "a", "arguments": {"x": \n</tool_call>',
    '<tool_call>\n{"name": "a", "arguments": {"x": 1}',
    '<tool_call>\n["a"]\n</tool_call>',
])
def test_qwen_unparsed_is_text_and_flagged(text: str) -> None:
    p = parse_reply(text, "qwen", TOOLS)
    assert p.content == text and p.tool_calls == [] and p.parse_error


def test_qwen3_coder_xml_with_schema_types() -> None:
    text = ("<think>\nok\n</think>\n\nEditing.\n<tool_call>\n<function=edit>\n"
            "<parameter=path>\nsrc/a.py\n</parameter>\n"
            "<parameter=line>\n12\n</parameter>\n<parameter=force>\ntrue\n</parameter>\n"
            "<parameter=opts>\n{\"a\": [1]}\n</parameter>\n<parameter=ratio>\n0.5\n</parameter>\n"
            "</function>\n</tool_call>")
    p = parse_reply(text, "qwen3_coder", TOOLS, id_prefix="toolu_")
    assert p.reasoning == "ok" and p.content == "Editing."
    (c,) = p.tool_calls
    assert c.name == "edit" and c.id.startswith("toolu_")
    assert json.loads(c.arguments) == {"path": "src/a.py", "line": 12, "force": True, "opts": {"a": [1]}, "ratio": 0.5}


def test_qwen3_coder_multiline_string_and_unclosed() -> None:
    p = parse_reply("<tool_call>\n<function=w>\n<parameter=body>\nline1\nline2\n</parameter>\n"
                    "</function>\n</tool_call>",
                    "qwen3_coder", [])
    assert json.loads(p.tool_calls[0].arguments) == {"body": "line1\nline2"}
    bad = "<tool_call>\n<function=w>\n<parameter=body>\nx"
    p = parse_reply(bad, "qwen3_coder", [])
    assert p.parse_error and p.content == bad


def test_in_think_and_none_parser() -> None:
    p = parse_reply("reason\n</think>\n\n<tool_call>x</tool_call>", "none", in_think=True)
    assert p.reasoning == "reason" and p.content == "<tool_call>x</tool_call>" and not p.tool_calls
