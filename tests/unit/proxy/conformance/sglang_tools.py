# ruff: noqa: E501
"""SGLang's Qwen3-coder detector and unknown-tool cases, as data (fields as in ``vllm_qwen3coder``)."""

from __future__ import annotations

from typing import Any

Q = "sgl-project/sglang:test/registered/function_call/test_qwen3_coder_detector/test_cases.py"
U = "sgl-project/sglang:test/registered/function_call/test_unknown_tool_name.py"
W3 = ["get_current_weather", {"location": "Boston", "unit": "celsius", "days": 3}]
BOSTON = ("<function=get_current_weather>\n<parameter=location>Boston</parameter>\n<parameter=unit>celsius</parameter>\n"
          "<parameter=days>3</parameter>\n</function>")

CASES: list[dict[str, Any]] = [
    dict(id="plain_text", src=Q, tools="sglang_coder", text="This is plain text test", calls=[],
         content="This is plain text test"),
    dict(id="single_tool_call", src=Q, tools="sglang_coder", text=BOSTON, calls=[W3], content=None),
    dict(id="single_tool_call_with_text", src=Q, tools="sglang_coder", text="Text prefix + tool call test\n\n" + BOSTON,
         calls=[W3], content="Text prefix + tool call test"),
    dict(id="double_tool_call", src=Q, tools="sglang_coder",
         text="Text prefix + double tool call test\n\n<function=get_current_weather>\n<parameter=location>New York"
              "</parameter>\n</function>\n<function=sql_interpreter>\n<parameter=query>SELECT * FROM users</parameter>\n"
              "<parameter=dry_run>True</parameter>\n</function>\n",
         calls=[["get_current_weather", {"location": "New York"}],
                ["sql_interpreter", {"query": "SELECT * FROM users", "dry_run": True}]],
         content="Text prefix + double tool call test"),
    dict(id="random_fragmentation", src=Q, tools="sglang_coder",
         text="Text prefix + random fragmentation stress test\n\n<function=get_current_weather>\n"
              "<parameter=location>San Francisco</parameter>\n</function>",
         calls=[["get_current_weather", {"location": "San Francisco"}]],
         content="Text prefix + random fragmentation stress test"),
    dict(id="implicit_parameter_close", src=Q, tools="sglang_coder",
         text="Text prefix + implicit parameter close test\n\n<function=get_current_weather>\n<parameter=location>Paris\n"
              "<parameter=unit>celsius\n<parameter=days>3\n</function>",
         calls=[["get_current_weather", {"location": "Paris", "unit": "celsius", "days": 3}]],
         content="Text prefix + implicit parameter close test"),
    dict(id="complex_schema", src=Q, tools="sglang_coder",
         text="Text prefix + complex schema tool call test\n\n<function=TodoWrite>\n<parameter=todos>\n[\n"
              ' {"content": "Buy a new car", "status": \'pending\'},\n {"content": "Buy a new house", "status": "completed"}\n'
              "]\n</parameter>\n</function>\n\n",
         calls=[["TodoWrite", {"todos": [{"content": "Buy a new car", "status": "pending"},
                                         {"content": "Buy a new house", "status": "completed"}]}]],
         content="Text prefix + complex schema tool call test"),
    dict(id="unknown_tool_name_dropped_default", src=U, parser="qwen", tools="sglang_weather",
         text='<tool_call>{"name":"unknown_tool","parameters":{"city":"Paris"}}</tool_call>',
         calls=[["unknown_tool", {"city": "Paris"}]], content=None,
         choice="unknown-tool", peer={"calls": []}),
    dict(id="unknown_tool_name_forwarded", src=U, parser="qwen", tools="sglang_weather",
         text='<tool_call>{"name":"unknown_tool","parameters":{"city":"Paris"}}</tool_call>',
         calls=[["unknown_tool", {"city": "Paris"}]], content=None),
]
