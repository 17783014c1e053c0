# ruff: noqa: E501
"""Cases of our own for what issue 26 lists and the peers' tests do not hold (not counted as peer cases)."""

from __future__ import annotations

from typing import Any

SRC = "polar-hpc issue 26"
EDIT = ("<tool_call>\n<function=edit>\n{params}</function>\n</tool_call>")


def _edit(**params: str) -> str:
    return EDIT.format(params="".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items()))


CASES: list[dict[str, Any]] = [
    dict(id="float_beyond_2_53", src=SRC, tools="ours_edit", text=_edit(ratio="9007199254740993.25"),
         calls=[["edit", {"ratio": 9007199254740993.25}]], content=None),
    dict(id="integer_beyond_2_64", src=SRC, tools="ours_edit", text=_edit(line="123456789012345678901234567890"),
         calls=[["edit", {"line": 123456789012345678901234567890}]], content=None),
    dict(id="boolean_any_case", src=SRC, tools="ours_edit", text=_edit(force="False"), calls=[["edit", {"force": False}]],
         content=None),
    dict(id="oneof_object_or_null", src=SRC, tools="ours_edit", text=_edit(opts='{"a": {"b": [1, null, true]}}'),
         calls=[["edit", {"opts": {"a": {"b": [1, None, True]}}}]], content=None),
    dict(id="oneof_null_literal", src=SRC, tools="ours_edit", text=_edit(opts="null"), calls=[["edit", {"opts": None}]],
         content=None),
    dict(id="nested_object_python_literal", src=SRC, tools="ours_edit", text=_edit(nested="{'x': {'y': (1, 2)}, 'ok': True, 'n': None}"),
         calls=[["edit", {"nested": {"x": {"y": [1, 2]}, "ok": True, "n": None}}]], content=None),
    dict(id="array_not_json_stays_text", src=SRC, tools="ours_edit", text=_edit(items="a, b, c"),
         calls=[["edit", {"items": "a, b, c"}]], content=None),
    dict(id="whitespace_inside_values_kept", src=SRC, tools="ours_edit", text=_edit(path="  lead and trail  \n\n", body="\tx\r\ny  "),
         calls=[["edit", {"path": "  lead and trail  \n\n", "body": "\tx\r\ny  "}]], content=None),
    dict(id="undeclared_parameter_stays_text", src=SRC, tools="ours_edit", text=_edit(extra="42"),
         calls=[["edit", {"extra": "42"}]], content=None),
    dict(id="unknown_tool_xml_forwarded_as_text", src=SRC, tools="ours_edit",
         text="<tool_call>\n<function=other>\n<parameter=n>\n1\n</parameter>\n</function>\n</tool_call>",
         calls=[["other", {"n": "1"}]], content=None),
    dict(id="xml_cut_inside_a_parameter", src=SRC, tools="ours_edit", error=True,
         text="Editing.\n<tool_call>\n<function=edit>\n<parameter=path>\nsrc/a", calls=[],
         content="Editing.\n<tool_call>\n<function=edit>\n<parameter=path>\nsrc/a",
         choice="cut-calls", peer={"calls": [["edit", {"path": "src/a"}]]}),
    dict(id="xml_cut_before_function_close", src=SRC, tools="ours_edit", error=True,
         text="<tool_call>\n<function=edit>\n<parameter=path>\nsrc/a\n</parameter>\n", calls=[],
         content="<tool_call>\n<function=edit>\n<parameter=path>\nsrc/a\n</parameter>",
         choice="cut-calls", peer={"calls": [["edit", {"path": "src/a"}]]}),
    dict(id="xml_good_call_then_cut_call", src=SRC, tools="ours_edit", error=True,
         text=_edit(path="a.py") + "\n<tool_call>\n<function=edit>\n<parameter=path>\nb.p",
         calls=[["edit", {"path": "a.py"}]], content="<tool_call>\n<function=edit>\n<parameter=path>\nb.p"),
    dict(id="json_cut_by_max_tokens", src=SRC, parser="qwen", error=True,
         text='<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la /ver', calls=[],
         content='<tool_call>\n{"name": "bash", "arguments": {"command": "ls -la /ver'),
    dict(id="json_malformed_beside_good_calls", src=SRC, parser="qwen", error=True,
         text='<tool_call>\n{"name": "a", "arguments": {}}\n</tool_call>\n<tool_call>\n{"name": "b", "arguments": {"x": }\n</tool_call>\n'
              '<tool_call>\n{"name": "c", "arguments": {"y": 2}}\n</tool_call>',
         calls=[["a", {}], ["c", {"y": 2}]], content='<tool_call>\n{"name": "b", "arguments": {"x": }\n</tool_call>'),
    dict(id="json_complete_call_at_the_end_without_close", src=SRC, parser="qwen",
         text='Running it.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n',
         calls=[["bash", {"command": "ls"}]], content="Running it."),
    dict(id="json_string_holding_the_format_markup", src=SRC, parser="qwen",
         text='<tool_call>\n{"name": "bash", "arguments": {"command": "echo \'</tool_call>\' <tool_call> </think>"}}\n</tool_call>',
         calls=[["bash", {"command": "echo '</tool_call>' <tool_call> </think>"}]], content=None),
    dict(id="json_exact_number_text_kept", src=SRC, parser="qwen",
         text='<tool_call>\n{"name": "n", "arguments": {"big": 9007199254740993, "f": 0.10000000000000001}}\n</tool_call>',
         raw_arguments=['{"big": 9007199254740993, "f": 0.10000000000000001}'], content=None),
    dict(id="duplicated_think_after_template_opened_one", src=SRC, in_think=True,
         text="<think>\nplanning\n</think>\n\nDone.", reasoning="planning", content="Done."),
    dict(id="duplicated_think_streamed", src=SRC, in_think=True, chunks=["<", "thi", "nk>", "\nplan", "\n</th", "ink>\n\nok"],
         reasoning="plan", content="ok"),
    dict(id="think_close_inside_a_call_value_is_not_reasoning", src=SRC, parser="qwen",
         text='<tool_call>\n{"name": "bash", "arguments": {"command": "grep -n </think> x"}}\n</tool_call>',
         reasoning=None, calls=[["bash", {"command": "grep -n </think> x"}]], content=None),
    dict(id="reasoning_holding_call_markup_then_a_call", src=SRC, parser="qwen",
         text='<think>I will write <tool_call>{"name": "x"}</tool_call> next.</think>\n\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>',
         reasoning='I will write <tool_call>{"name": "x"}</tool_call> next.', calls=[["bash", {"command": "ls"}]],
         content=None),
]
