"""Tool calls written as the model writes them: the text ``inference.tool_parser`` parses back.

``qwen``: ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`` per call, joined by a newline, exactly
as the Qwen chat templates render an assistant's tool calls (so a canonical re-render of the history gives the
same tokens); ``qwen3_coder``: ``<tool_call>\\n<function=NAME>\\n<parameter=P>\\nVALUE\\n</parameter>\\n...``.
No ``<think>`` block: an empty one is what Qwen3's template strips from history.
"""

from __future__ import annotations

import json
from typing import Any

from polar_hpc.config.run import ToolParser
from polar_hpc.policy.script import OracleError


def _qwen(name: str, args: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "\n</tool_call>"


def _xml_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _qwen3_coder(name: str, args: dict[str, Any]) -> str:
    params = "".join(f"<parameter={k}>\n{_xml_value(v)}\n</parameter>\n" for k, v in args.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def tool_calls_text(calls: list[tuple[str, dict[str, Any]]], parser: ToolParser) -> str:
    if parser == "qwen":
        return "\n".join(_qwen(n, a) for n, a in calls)
    if parser == "qwen3_coder":
        return "\n".join(_qwen3_coder(n, a) for n, a in calls)
    raise OracleError(f"the oracle writes tool calls in the model's format; inference.tool_parser {parser!r} has none "
                      "(expected qwen or qwen3_coder)")
