# ruff: noqa: E501
"""vLLM's hermes (Qwen JSON ``<tool_call>``) parser cases, as data (fields as in ``vllm_qwen3coder``)."""

from __future__ import annotations

import json
from typing import Any

H = "vllm-project/vllm:tests/tool_parsers/test_hermes_tool_parser.py"
TRIGGER = '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}\n</tool_call>'
TEMP = ('<tool_call>{"name": "get_current_temperature","arguments": {"location":"San Francisco, California, United States", '
        '"unit": "celsius"}}</tool_call>')
SF = ('<tool_call>{"name": "get_current_temperature", "arguments": {"location": "San Francisco", "unit": "celsius"}}'
      "</tool_call>")
SERIALIZED = '<tool_call>\n{"name": "get_db_config", "arguments": "{\\"param\\": \\"max_connections\\"}"}\n</tool_call>'


def _string_args(value: str) -> str:
    return "<tool_call>" + json.dumps({"name": "f", "arguments": value}) + "</tool_call>"


CASES: list[dict[str, Any]] = [
    dict(id="streaming_just_forward_text", src=H, text="This is some prior text that has nothing to do with tool calling.",
         calls=[], content="This is some prior text that has nothing to do with tool calling."),
    dict(id="streaming_failure_case_bug_19056", src=H, text=TRIGGER, calls=[["final_answer", {"trigger": True}]],
         content=None),
    dict(id="streaming", src=H, text=TEMP, content=None,
         calls=[["get_current_temperature", {"location": "San Francisco, California, United States", "unit": "celsius"}]]),
    dict(id="streaming_tool_call_with_stream_interval", src=H, text=SF, content=None,
         calls=[["get_current_temperature", {"location": "San Francisco", "unit": "celsius"}]]),
    dict(id="streaming_content_then_tool_call_with_stream_interval", src=H,
         text='Sure, let me check the weather.<tool_call>{"name": "get_weather", "arguments": {"city": "NYC"}}</tool_call>',
         calls=[["get_weather", {"city": "NYC"}]], content="Sure, let me check the weather."),
    dict(id="streaming_multiple_tool_calls_with_stream_interval", src=H,
         text='<tool_call>{"name": "search", "arguments": {"q": "cats"}}</tool_call>'
              '<tool_call>{"name": "search", "arguments": {"q": "dogs"}}</tool_call>',
         calls=[["search", {"q": "cats"}], ["search", {"q": "dogs"}]], content=None),
    dict(id="streaming_just_forward_text_with_stream_interval", src=H,
         text="This is plain text with no tool calling involved.", calls=[],
         content="This is plain text with no tool calling involved."),
    dict(id="non_streaming_no_tool_call", src=H, text="This is not a tool call.", calls=[],
         content="This is not a tool call."),
    dict(id="non_streaming_tool_call_between_tags", src=H, text=TRIGGER, calls=[["final_answer", {"trigger": True}]],
         content=None, raw_arguments=['{"trigger": true}']),
    dict(id="non_streaming_tool_call_until_eos", src=H,
         text='<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}',
         calls=[["final_answer", {"trigger": True}]], content=None, raw_arguments=['{"trigger": true}']),
    dict(id="non_streaming_tool_call_invalid_json", src=H, error=True, calls=[],
         text='<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}',
         content='<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}'),
    dict(id="non_streaming_serialized_arguments", src=H, text=SERIALIZED, content=None,
         calls=[["get_db_config", {"param": "max_connections"}]]),
    dict(id="non_streaming_bare_string_arguments", src=H, error=True, calls=[],
         text='<tool_call>\n{"name": "do_thing", "arguments": "hello"}\n</tool_call>',
         content='<tool_call>\n{"name": "do_thing", "arguments": "hello"}\n</tool_call>',
         choice="arguments-object", peer={"calls": [["do_thing", "hello"]]}),
    dict(id="streaming_serialized_arguments_with_stream_interval", src=H, content=None,
         text='<tool_call>{"name": "get_db_config", "arguments": "{\\"param\\": \\"max_connections\\"}"}</tool_call>',
         calls=[["get_db_config", {"param": "max_connections"}]]),
    dict(id="streaming_string_arguments_serialized_object", src=H, text=_string_args('{"param": "max_connections"}'),
         calls=[["f", {"param": "max_connections"}]], content=None),
    dict(id="streaming_content_and_tool_call_in_single_chunk", src=H,
         chunks=['Hi!<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>'],
         calls=[["f", {"x": 1}]], content="Hi!"),
]
for _v in ("hello", "{hello world}", "[oops", '{"a": 1} tail text'):
    CASES.append(dict(id=f"streaming_string_arguments_{_v[:8]}", src=H, text=_string_args(_v), error=True, calls=[],
                      content=_string_args(_v), choice="arguments-object", peer={"calls": [["f", _v]]}))
