# ruff: noqa: E501
"""vLLM's Qwen3-coder XML parser cases (inputs and expected outputs transcribed as data).

Fields: ``id``, ``src`` (the test file), ``text`` (model output), ``tools`` (a key of ``tools.TOOLSETS``),
``calls`` ([name, arguments]), ``content``, optional ``error`` (ours flags unparsed syntax), ``chunks`` (the
deltas the peer streams), ``choice`` (a ``docs/parsing.md`` anchor where ours differs) with ``peer`` (theirs).
"""

from __future__ import annotations

from typing import Any

C = "vllm-project/vllm:tests/tool_parsers/test_qwen3coder_tool_parser.py"
SH = "vllm-project/vllm:tests/tool_parsers/test_qwen3_xml_coder_shared.py"
B36 = "vllm-project/vllm:tests/tool_parsers/test_qwen36_bugs.py"

DALLAS = ("<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n"
          "<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>")
ORLANDO_F = DALLAS.replace("Dallas", "Orlando").replace("TX", "FL")
ORLANDO_C = ORLANDO_F.replace("fahrenheit", "celsius")
RECT = ("<tool_call>\n<function=calculate_area>\n<parameter=shape>\nrectangle\n</parameter>\n<parameter=dimensions>\n"
        "{\"width\": 10, \n \"height\": 20}\n</parameter>\n<parameter=precision>\n2\n</parameter>\n</function>\n</tool_call>")
CIRCLE = ("Let me calculate that area for you.<tool_call>\n<function=calculate_area>\n<parameter=shape>\ncircle\n"
          "</parameter>\n<parameter=dimensions>\n{\"radius\": 15.5}\n</parameter>\n<parameter=precision>\n3\n"
          "</parameter>\n</function>\n</tool_call>")
W_DALLAS = ["get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}]
TYPES_TEXT = ("<tool_call>\n<function=test_types>\n<parameter=int_param>\n42\n</parameter>\n<parameter=float_param>\n"
              "3.14\n</parameter>\n<parameter=bool_param>\ntrue\n</parameter>\n<parameter=str_param>\nhello world\n"
              "</parameter>\n<parameter=obj_param>\n{\"key\": \"value\"}\n</parameter>\n</function>\n</tool_call>")
ANYOF_TEXT = ("<tool_call>\n<function=test_anyof>\n<parameter=anyof_int>\n5\n</parameter>\n<parameter=anyof_str>\nhello\n"
              "</parameter>\n<parameter=anyof_array>\n[\"a\", \"b\", \"c\"]\n</parameter>\n<parameter=anyof_obj>\n"
              "{\"key\": \"value\"}\n</parameter>\n<parameter=type_as_array>\n42\n</parameter>\n"
              "<parameter=multi_non_null>\nsome text\n</parameter>\n</function>\n</tool_call>")
MISSING_CLOSE = ("Let me check the weather for you:\n<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n"
                 "<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>")
TWO_WEATHER = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n"
               "<tool_call>\n<function=get_weather>\n<parameter=city>\nLondon\n</parameter>\n</function>\n</tool_call>")
XML_TAGS_IN_CONTENT = ('char_deltas = [\n    "<tool_call>\\n",\n    "<parameter=query>\\n",\n    "\\n</parameter>\\n",\n'
                       '    "</function>\\n",\n]\n')
PARAM_LIKE = 'TOOL_CALL_TEMPLATE = """\n</parameter>\n<parameter=new_string>\n#!/usr/bin/env python3\n</parameter>\n"""\n'
REAL_NAME_LITERAL = 'doc = """\n<parameter=path>\nliteral/value\n</parameter>\n"""\n'
FULL_NESTED = ('doc = """\n<tool_call>\n<function=write_file>\n<parameter=path>\nliteral/value.txt\n</parameter>\n'
               '<parameter=content>\nhello\n</parameter>\n</function>\n</tool_call>\n"""\n')
OUT_OF_SCHEMA = 'template = """\n<tool_call>\n<function=foo>\n<parameter=bar>baz</parameter>\n</function>\n</tool_call>\n"""\n'


def _write(path: str, content: str) -> str:
    return ("<tool_call>\n<function=write_file>\n<parameter=path>\n" + path + "\n</parameter>\n"
            "<parameter=content>\n" + content + "</parameter>\n</function>\n</tool_call>\n")


def _one(fn: str, param: str, value: str) -> str:
    return f"<tool_call>\n<function={fn}>\n<parameter={param}>{value}</parameter>\n</function>\n</tool_call>"


CASES: list[dict[str, Any]] = [
    dict(id="no_tools", src=C, tools="vllm_sample", text="This is a test response without any tool calls",
         calls=[], content="This is a test response without any tool calls"),
    dict(id="single_tool", src=C, tools="vllm_sample", text=DALLAS, calls=[W_DALLAS], content=None),
    dict(id="single_tool_with_content", src=C, tools="vllm_sample",
         text="Sure! Let me check the weather for you." + DALLAS, calls=[W_DALLAS],
         content="Sure! Let me check the weather for you."),
    dict(id="single_tool_multiline_param", src=C, tools="vllm_sample", text=RECT, content=None,
         calls=[["calculate_area", {"shape": "rectangle", "dimensions": {"width": 10, "height": 20}, "precision": 2}]]),
    dict(id="parallel_tools", src=C, tools="vllm_sample", text=DALLAS + "\n" + ORLANDO_F, content=None,
         calls=[W_DALLAS, ["get_current_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}]]),
    dict(id="parallel_tools_streaming", src=C, tools="vllm_sample", text=DALLAS + "\n" + ORLANDO_C, content=None,
         calls=[W_DALLAS, ["get_current_weather", {"city": "Orlando", "state": "FL", "unit": "celsius"}]]),
    dict(id="tool_with_typed_params", src=C, tools="vllm_sample", text=CIRCLE,
         content="Let me calculate that area for you.",
         calls=[["calculate_area", {"shape": "circle", "dimensions": {"radius": 15.5}, "precision": 3}]]),
    dict(id="fallback_no_tags", src=C, tools="vllm_sample", content=None,
         text="<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n"
              "</parameter>\n</function>",
         calls=[["get_current_weather", {"city": "Dallas", "state": "TX"}]]),
    dict(id="type_conversion", src=C, tools="vllm_types", text=TYPES_TEXT, content=None,
         calls=[["test_types", {"int_param": 42, "float_param": 3.14, "bool_param": True, "str_param": "hello world",
                                "obj_param": {"key": "value"}}]]),
    dict(id="anyof_type_conversion", src=C, tools="vllm_anyof", text=ANYOF_TEXT, content=None,
         calls=[["test_anyof", {"anyof_int": 5, "anyof_str": "hello", "anyof_array": ["a", "b", "c"],
                                "anyof_obj": {"key": "value"}, "type_as_array": 42, "multi_non_null": "some text"}]]),
    dict(id="anyof_type_conversion_streaming", src=C, tools="vllm_search_web", content=None,
         text="<tool_call>\n<function=search_web>\n<parameter=query>\nvllm tool parser\n</parameter>\n"
              "<parameter=count>\n10\n</parameter>\n<parameter=verbose>\ntrue\n</parameter>\n</function>\n</tool_call>",
         calls=[["search_web", {"query": "vllm tool parser", "count": 10, "verbose": True}]]),
    dict(id="missing_closing_parameter_tag", src=C, tools="vllm_sample", text=MISSING_CLOSE, calls=[W_DALLAS],
         content="Let me check the weather for you:"),
    dict(id="streaming_incremental", src=C, tools="vllm_sample",
         text="I'll check the weather.<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n"
              "</parameter>\n<parameter=state>\nTX\n</parameter>\n</function>\n</tool_call>",
         calls=[["get_current_weather", {"city": "Dallas", "state": "TX"}]], content="I'll check the weather."),
    dict(id="streaming_missing_opening_tag", src=C, tools="vllm_sample",
         text="I'll check the weather for you.\n\n" + DALLAS[len("<tool_call>\n"):], calls=[W_DALLAS],
         content="I'll check the weather for you."),
    dict(id="malformed_xml_no_gt_delimiter", src=C, tools="vllm_sample", error=True, calls=[],
         text="<tool_call>\n<function=get_current_weather\n<parameter=city>Dallas</parameter>\n</function>\n</tool_call>",
         content="<tool_call>\n<function=get_current_weather\n<parameter=city>Dallas</parameter>\n</function>\n"
                 "</tool_call>"),
    dict(id="none_tool_calls_filtered", src=C, tools="vllm_sample", error=True,
         text="<tool_call>\n<function=bad_func_no_gt\n</function>\n</tool_call>\n<tool_call>\n"
              "<function=get_current_weather>\n<parameter=city>Dallas</parameter>\n<parameter=state>TX</parameter>\n"
              "</function>\n</tool_call>",
         calls=[["get_current_weather", {"city": "Dallas", "state": "TX"}]],
         content="<tool_call>\n<function=bad_func_no_gt\n</function>\n</tool_call>",
         choice="malformed-call-text", peer={"content": None}),
    dict(id="anyof_parameter_not_double_encoded", src=C, tools="vllm_update_record", content=None,
         text=_one("update_record", "data", '{"key": "value", "count": 42}'),
         calls=[["update_record", {"data": {"key": "value", "count": 42}}]]),
    dict(id="streaming_multi_param_single_chunk", src=C, tools="vllm_sample", content=None,
         chunks=["<tool_call>", "\n<function=get_current_weather>", "\n",
                 "<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>"
                 "\n<parameter=unit>\nfahrenheit\n</parameter>", "\n</function>", "\n</tool_call>"],
         calls=[W_DALLAS]),
    dict(id="no_double_serialization_string_args", src=C, tools="vllm_greet", content=None,
         text=_one("greet", "message", "hello world"), calls=[["greet", {"message": "hello world"}]]),
    dict(id="xml_array_with_json_bool", src=B36, tools="vllm_pick", content=None,
         text='<tool_call>\n<function=pick>\n<parameter=items>\n["a", "b", 1, true]\n</parameter>\n</function>\n</tool_call>',
         calls=[["pick", {"items": ["a", "b", 1, True]}]]),
    dict(id="coder_two_tool_calls_in_one_streaming_chunk", src=B36, tools="vllm_weather", chunks=[TWO_WEATHER],
         calls=[["get_weather", {"city": "Paris"}], ["get_weather", {"city": "London"}]], content=None),
    dict(id="complex_type_with_single_quote", src=SH, tools="vllm_types", content=None,
         text="<tool_call>\n<function=test_types>\n<parameter=obj_param>\n{'key': 'value'}\n</parameter>\n</function>\n"
              "</tool_call>",
         calls=[["test_types", {"obj_param": {"key": "value"}}]]),
    dict(id="streaming_speculative_decode_loss", src=SH, tools="vllm_sample", content=None,
         chunks=["<tool_call>\n<function=test>\n", "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"],
         calls=[["test", {"city": "Paris"}]]),
    dict(id="string_null_value_preserved", src=SH, tools="vllm_search", content=None,
         text=_one("search", "query", "null"), calls=[["search", {"query": "null"}]]),
    dict(id="anyof_string_null_keeps_value_as_string", src=SH, tools="vllm_set_code", content=None,
         text=_one("set_code", "code", "42"), calls=[["set_code", {"code": "42"}]]),
    dict(id="anyof_integer_null_parses_as_int", src=SH, tools="vllm_set_count", content=None,
         text=_one("set_count", "count", "42"), calls=[["set_count", {"count": 42}]]),
    dict(id="anyof_object_param_not_double_encoded_streaming", src=SH, tools="vllm_update_record", content=None,
         chunks=["<tool_call>", "\n<function=update_record>", '\n<parameter=data>{"key": "value", "count": 42}</parameter>',
                 "\n</function>", "\n</tool_call>"],
         calls=[["update_record", {"data": {"key": "value", "count": 42}}]]),
    dict(id="double_encoded_object_param", src=SH, tools="vllm_process", content=None,
         text="<tool_call>\n<function=process>\n<parameter=name>\nhello\n</parameter>\n<parameter=data>\n"
              "\"{'key': 'value', 'n': 1}\"\n</parameter>\n</function>\n</tool_call>\n",
         calls=[["process", {"name": "hello", "data": {"key": "value", "n": 1}}]]),
    dict(id="content_with_xml_structural_tags", src=SH, tools="vllm_write_file", content=None,
         text=_write("test.py", XML_TAGS_IN_CONTENT),
         calls=[["write_file", {"path": "test.py", "content": XML_TAGS_IN_CONTENT.rstrip("\n")}]]),
    dict(id="content_with_param_like_lines", src=SH, tools="vllm_write_file", content=None,
         text=_write("test_template.py", PARAM_LIKE),
         calls=[["write_file", {"path": "test_template.py", "content": PARAM_LIKE.rstrip("\n")}]]),
    dict(id="content_with_param_like_lines_streaming", src=SH, tools="vllm_write_file", content=None,
         chunks=["<tool_call>\n", "<function=write_file>\n", "<parameter=path>\ntest_template.py\n</parameter>\n",
                 '<parameter=content>\nTOOL_CALL_TEMPLATE = """\n', "</parameter>\n", "<parameter=new_string>\n",
                 "#!/usr/bin/env python3\n", "</parameter>\n", '"""\n', "</parameter>\n", "</function>\n",
                 "</tool_call>\n"],
         calls=[["write_file", {"path": "test_template.py", "content": PARAM_LIKE.rstrip("\n")}]]),
    dict(id="streaming_two_tool_calls_plus_trailing_text_one_delta", src=SH, tools="vllm_weather",
         chunks=[TWO_WEATHER + "\nAll done!"], content="All done!",
         calls=[["get_weather", {"city": "Paris"}], ["get_weather", {"city": "London"}]]),
    dict(id="streaming_trailing_text_with_final_close_in_same_delta", src=SH, tools="vllm_weather",
         chunks=["<tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>",
                 "\n</tool_call>\nI hope this helps!"],
         calls=[["get_weather", {"city": "Paris"}]], content="I hope this helps!"),
    dict(id="python_none_value_for_nullable_int", src=SH, tools="vllm_set_count", content=None,
         text=_one("set_count", "count", "None"), calls=[["set_count", {"count": None}]]),
    dict(id="content_with_real_param_name_literal", src=SH, tools="vllm_write_file", content=None,
         text=_write("fixture.py", REAL_NAME_LITERAL).rstrip("\n"),
         calls=[["write_file", {"path": "fixture.py", "content": REAL_NAME_LITERAL.rstrip("\n")}]]),
    dict(id="content_with_full_nested_tool_call", src=SH, tools="vllm_write_file", content=None,
         text=_write("fixture.py", FULL_NESTED).rstrip("\n"),
         calls=[["write_file", {"path": "fixture.py", "content": FULL_NESTED.rstrip("\n")}]]),
    dict(id="two_tools_second_with_out_of_schema_nested_literal", src=SH, tools="vllm_write_file", content=None,
         text="<tool_call>\n<function=foo>\n<parameter=bar>baz</parameter>\n</function>\n</tool_call>\n\n"
              + _write("fixture.py", OUT_OF_SCHEMA).rstrip("\n"),
         calls=[["foo", {"bar": "baz"}], ["write_file", {"path": "fixture.py", "content": OUT_OF_SCHEMA.rstrip("\n")}]]),
    dict(id="jinja_template_phantom_tool_call_is_rejected", src=SH, tools="vllm_write_file", error=True,
         text="<tool_call>\n<function={{ tc.name }}>\n<parameter={{ k }}>\n{{ v }}\n</parameter>\n</function>\n"
              "</tool_call>\n\n" + _write("out.txt", "hello\n").rstrip("\n"),
         calls=[["write_file", {"path": "out.txt", "content": "hello"}]],
         content="<tool_call>\n<function={{ tc.name }}>\n<parameter={{ k }}>\n{{ v }}\n</parameter>\n</function>\n"
                 "</tool_call>",
         choice="malformed-call-text", peer={"content": None}),
    dict(id="inline_empty_tool_call_preserves_content_before_real_call", src=SH, tools="vllm_log",
         text="I'll show: <tool_call>example</tool_call>. Now real:\n<tool_call>\n<function=log>\n<parameter=msg>\nhi\n"
              "</parameter>\n</function>\n</tool_call>",
         calls=[["log", {"msg": "hi"}]], content="I'll show: <tool_call>example</tool_call>. Now real:"),
    dict(id="anyof_string_null_with_null_literal_returns_none", src=SH, tools="vllm_set_value", content=None,
         text=_one("set_value", "optional", "null"), calls=[["set_value", {"optional": None}]]),
    dict(id="anyof_string_null_with_None_literal_returns_none", src=SH, tools="vllm_set_value", content=None,
         text=_one("set_value", "optional", "None"), calls=[["set_value", {"optional": None}]]),
]

# One case per typed parameter the peers assert on (the same input cut to that parameter).
for _name, _raw, _want in [("int_param", "42", 42), ("float_param", "3.14", 3.14), ("bool_param", "true", True),
                           ("str_param", "hello world", "hello world"), ("obj_param", '{"key": "value"}', {"key": "value"})]:
    CASES.append(dict(id=f"type_conversion_{_name}", src=C, tools="vllm_types", content=None,
                      text=f"<tool_call>\n<function=test_types>\n<parameter={_name}>\n{_raw}\n</parameter>\n</function>\n"
                           "</tool_call>", calls=[["test_types", {_name: _want}]]))
for _name, _raw, _want in [("anyof_int", "5", 5), ("anyof_str", "hello", "hello"),
                           ("anyof_array", '["a", "b", "c"]', ["a", "b", "c"]), ("anyof_obj", '{"key": "value"}', {"key": "value"}),
                           ("type_as_array", "42", 42), ("multi_non_null", "some text", "some text")]:
    CASES.append(dict(id=f"anyof_type_conversion_{_name}", src=C, tools="vllm_anyof", content=None,
                      text=f"<tool_call>\n<function=test_anyof>\n<parameter={_name}>\n{_raw}\n</parameter>\n</function>\n"
                           "</tool_call>", calls=[["test_anyof", {_name: _want}]]))
