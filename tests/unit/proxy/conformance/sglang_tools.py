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

D = "sgl-project/sglang:test/registered/unit/function_call/test_qwen3_coder_detector.py"
N = "sgl-project/sglang:test/registered/unit/function_call/test_qwen3_coder_numeric_precision.py"
Q25 = "sgl-project/sglang:test/registered/unit/function_call/test_qwen25_detector.py"
HD = "sgl-project/sglang:test/registered/unit/function_call/test_hermes_detector.py"
MP = "sgl-project/sglang:test/registered/unit/function_call/test_malformed_tool_call_payloads.py"
ZA = "sgl-project/sglang:test/registered/unit/function_call/test_zero_argument_tool_call.py"


def _days(city_block: str) -> str:
    return ("<tool_call>\n<function=get_weather>\n<parameter=city>\n" + city_block + "\n<parameter=days>\n3\n</parameter>\n"
            "</function>\n</tool_call>")


def _lookup(raw: str) -> str:
    return f"<tool_call><function=lookup><parameter=value>{raw}</parameter></function></tool_call>"


for _marker in ("</parameter1>", "</parameter_function>", "</parameter"):
    CASES.append(dict(id=f"strips_drifted_end_marker_{_marker[2:]}", src=D, tools="sglang_weather_days",
                      text=_days(f"Shanghai\n{_marker}"), calls=[["get_weather", {"city": "Shanghai", "days": 3}]],
                      content=None))
CASES += [
    dict(id="well_formed_value_unchanged", src=D, tools="sglang_weather_days", text=_days("Shanghai\n</parameter>"),
         calls=[["get_weather", {"city": "Shanghai", "days": 3}]], content=None),
    dict(id="angle_brackets_inside_value_are_kept", src=D, tools="sglang_weather_days",
         text=_days("a <b>tag</b> city\n</parameter>"), calls=[["get_weather", {"city": "a <b>tag</b> city", "days": 3}]],
         content=None),
    dict(id="closed_value_ending_like_a_marker_is_kept_parameters", src=D, tools="sglang_weather_days",
         text=_days("<config>\n  <p>1</p>\n</parameters>\n</parameter>"),
         calls=[["get_weather", {"city": "<config>\n  <p>1</p>\n</parameters>", "days": 3}]], content=None),
    dict(id="closed_value_ending_like_a_marker_is_kept_parameterList", src=D, tools="sglang_weather_days",
         text=_days("x </parameterList>\n</parameter>"), calls=[["get_weather", {"city": "x </parameterList>", "days": 3}]],
         content=None),
    dict(id="long_whitespace_run_in_unclosed_value", src=D, tools="sglang_weather_days",
         text=_days("a" + " " * 100_000 + "b"), calls=[["get_weather", {"city": "a" + " " * 100_000 + "b", "days": 3}]],
         content=None),
]
for _v in (9007199254740993, -9007199254740993, 18446744073709551615, 1790892345000000001):
    CASES.append(dict(id=f"number_schema_preserves_large_integer_{_v}", src=N, tools="sglang_lookup_number",
                      text=_lookup(str(_v)), calls=[["lookup", {"value": _v}]], content=None))
CASES += [
    dict(id="number_schema_large_integer_with_blanks", src=N, tools="sglang_lookup_number",
         text=_lookup(" 9007199254740993 "), calls=[["lookup", {"value": 9007199254740993}]], content=None),
    dict(id="nullable_number_schema_preserves_large_integer", src=N, tools="sglang_lookup_nullable_number",
         text=_lookup("9007199254740993"), calls=[["lookup", {"value": 9007199254740993}]], content=None),
    dict(id="number_42", src=N, tools="sglang_lookup_number", text=_lookup("42"), calls=[["lookup", {"value": 42}]],
         content=None),
    dict(id="number_negative_fraction", src=N, tools="sglang_lookup_number", text=_lookup("-12.5"),
         calls=[["lookup", {"value": -12.5}]], content=None),
    dict(id="number_exponent", src=N, tools="sglang_lookup_number", text=_lookup("1.25e3"),
         calls=[["lookup", {"value": 1250.0}]], content=None),
    dict(id="number_not_a_number_stays_text", src=N, tools="sglang_lookup_number", text=_lookup("not-a-number"),
         calls=[["lookup", {"value": "not-a-number"}]], content=None),
    dict(id="number_null", src=N, tools="sglang_lookup_number", text=_lookup("null"), calls=[["lookup", {"value": None}]],
         content=None),
    dict(id="integer_schema_large_integer", src=N, tools="sglang_lookup_integer", text=_lookup("9007199254740993"),
         calls=[["lookup", {"value": 9007199254740993}]], content=None),
    dict(id="string_schema_large_integer", src=N, tools="sglang_lookup_string", text=_lookup("9007199254740993"),
         calls=[["lookup", {"value": "9007199254740993"}]], content=None),
    dict(id="qwen25_single_tool_call", src=Q25, parser="qwen", tools="sglang_weather_search",
         text='<tool_call>\n{"name": "get_weather", "arguments": {"city": "Beijing"}}\n</tool_call>',
         calls=[["get_weather", {"city": "Beijing"}]], content=None),
    dict(id="qwen25_multiple_tool_calls", src=Q25, parser="qwen", tools="sglang_weather_search",
         text='<tool_call>\n{"name": "get_weather", "arguments": {"city": "Beijing"}}\n</tool_call>\n'
              '<tool_call>\n{"name": "search", "arguments": {"query": "restaurants"}}\n</tool_call>',
         calls=[["get_weather", {"city": "Beijing"}], ["search", {"query": "restaurants"}]], content=None),
    dict(id="qwen25_tool_call_with_preceding_text", src=Q25, parser="qwen", tools="sglang_weather_search",
         text='Let me check the weather.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Shanghai"}}\n</tool_call>',
         calls=[["get_weather", {"city": "Shanghai"}]], content="Let me check the weather."),
    dict(id="qwen25_no_tool_call", src=Q25, parser="qwen", tools="sglang_weather_search",
         text="Hello, how can I help you today?", calls=[], content="Hello, how can I help you today?"),
    dict(id="qwen25_malformed_json", src=Q25, parser="qwen", tools="sglang_weather_search", error=True,
         text="<tool_call>\n{invalid json}\n</tool_call>", calls=[], content="<tool_call>\n{invalid json}\n</tool_call>"),
    dict(id="qwen25_tool_call_with_extra_whitespace", src=Q25, parser="qwen", tools="sglang_weather_search",
         text='<tool_call>\n  {"name": "get_weather", "arguments": {"city": "Tokyo"}}  \n</tool_call>',
         calls=[["get_weather", {"city": "Tokyo"}]], content=None),
    dict(id="qwen25_has_tool_call_partial_tag", src=Q25, parser="qwen", tools="sglang_weather_search", error=True,
         text="<tool_call>no newline so not matching bot_token", calls=[],
         content="<tool_call>no newline so not matching bot_token"),
    dict(id="qwen25_streaming_single_call", src=Q25, parser="qwen", tools="sglang_weather_search",
         chunks=["<tool_call>\n", '{"name": "get_weather",', ' "arguments": {"city": "Beijing"}}', "\n</tool_call>"],
         calls=[["get_weather", {"city": "Beijing"}]], content=None),
    dict(id="qwen25_streaming_normal_text_before_call", src=Q25, parser="qwen", tools="sglang_weather_search",
         chunks=["Hello there! "], calls=[], content="Hello there!"),
    dict(id="hermes_single_tool_call", src=HD, parser="qwen", tools="sglang_weather_search",
         text='<tool_call>{"name": "get_weather", "arguments": {"city": "Beijing"}}</tool_call>',
         calls=[["get_weather", {"city": "Beijing"}]], content=None),
    dict(id="hermes_multiple_tool_calls", src=HD, parser="qwen", tools="sglang_weather_search",
         text='<tool_call>{"name": "get_weather", "arguments": {"city": "Beijing"}}</tool_call>'
              '<tool_call>{"name": "search", "arguments": {"query": "restaurants"}}</tool_call>',
         calls=[["get_weather", {"city": "Beijing"}], ["search", {"query": "restaurants"}]], content=None),
    dict(id="hermes_tool_call_with_leading_text", src=HD, parser="qwen", tools="sglang_weather_search",
         text='I will check the weather for you. <tool_call>{"name": "get_weather", "arguments": {"city": "Tokyo"}}</tool_call>',
         calls=[["get_weather", {"city": "Tokyo"}]], content="I will check the weather for you."),
    dict(id="hermes_no_tool_call", src=HD, parser="qwen", tools="sglang_weather_search", text="The weather is nice today.",
         calls=[], content="The weather is nice today."),
    dict(id="hermes_tool_call_with_multiple_arguments", src=HD, parser="qwen", tools="sglang_weather_search",
         text='<tool_call>{"name": "get_weather", "arguments": {"city": "London", "unit": "celsius"}}</tool_call>',
         calls=[["get_weather", {"city": "London", "unit": "celsius"}]], content=None),
    dict(id="hermes_malformed_json_returns_original_text", src=HD, parser="qwen", tools="sglang_weather_search",
         error=True, text="<tool_call>not valid json</tool_call>", calls=[], content="<tool_call>not valid json</tool_call>"),
    dict(id="hermes_streaming_single_tool_call", src=HD, parser="qwen", tools="sglang_weather_search",
         chunks=["<tool_", 'call>{"name": "get_weather",', ' "arguments": {"city": "Beijing"', "}}</tool_call>"],
         calls=[["get_weather", {"city": "Beijing"}]], content=None),
    dict(id="valid_call_survives_a_malformed_sibling", src=MP, parser="qwen", tools="sglang_weather_days", error=True,
         text='<tool_call>\n[{"name": "get_weather", "arguments": {"city": "Paris"}}, "junk"]\n</tool_call>',
         calls=[["get_weather", {"city": "Paris"}]], content=None),
    dict(id="zero_argument_call_streams_empty_object", src=ZA, parser="qwen", tools="sglang_time_weather",
         text='<tool_call>\n{"name": "get_time"}\n</tool_call>', calls=[["get_time", {}]], content=None,
         raw_arguments=["{}"]),
    dict(id="zero_argument_call_does_not_drop_the_next_call", src=ZA, parser="qwen", tools="sglang_time_weather",
         text='<tool_call>\n{"name": "get_time"}\n</tool_call>\n'
              '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
         calls=[["get_time", {}], ["get_weather", {"city": "Paris"}]], content=None,
         raw_arguments=["{}", '{"city": "Paris"}']),
]
for _p in ("[1, 2]", '["x"]', "[null]", "[[]]"):
    CASES.append(dict(id=f"non_object_array_entries_are_skipped_{_p}", src=MP, parser="qwen", tools="sglang_weather_days",
                      error=True, text=f"<tool_call>\n{_p}\n</tool_call>", calls=[],
                      content=f"<tool_call>\n{_p}\n</tool_call>"))
