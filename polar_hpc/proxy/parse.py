"""Reasoning and tool calls out of the sampled text.

Formats: ``<think>…</think>`` (also closed-only when the prompt opened it, and unclosed before a tool call),
Qwen JSON ``<tool_call>{"name", "arguments"}</tool_call>``, Qwen3-coder XML
``<tool_call><function=NAME><parameter=P>value</parameter></function></tool_call>``. A tool call that does
not parse leaves the whole text as content and says why in ``parse_error``.
"""

from __future__ import annotations

import re
import secrets
from typing import Any

import msgspec

from polar_hpc.config.run import ToolParser
from polar_hpc.wire.records import ToolCall, ToolSpec

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
_CALL_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_FUNCTION = re.compile(r"<function=([^>\n]+)>(.*?)</function>", re.DOTALL)
_PARAM = re.compile(r"<parameter=([^>\n]+)>(.*?)</parameter>", re.DOTALL)
_DECODE = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder()


class ParsedReply(msgspec.Struct, kw_only=True):
    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    parse_error: str | None = None


def new_call_id(prefix: str = "call_") -> str:
    return prefix + secrets.token_urlsafe(12).replace("-", "x").replace("_", "y")


def split_reasoning(text: str, *, in_think: bool = False) -> tuple[str | None, str]:
    """(reasoning, rest). ``in_think``: the prompt ended inside an opened ``<think>``."""
    body = text
    if not in_think:
        stripped = text.lstrip()
        if stripped.startswith(THINK_OPEN):
            body = stripped[len(THINK_OPEN) :]
        elif THINK_CLOSE not in text:
            return None, text
    end = body.find(THINK_CLOSE)
    if end >= 0:
        reasoning, rest = body[:end], body[end + len(THINK_CLOSE) :]
    else:
        starts = [k for k in (body.find("<tool_call>"), body.find("<function=")) if k >= 0]
        cut = min(starts) if starts else len(body)
        reasoning, rest = body[:cut], body[cut:]
    return reasoning.strip("\n"), rest.lstrip("\n")


def _json_call(block: str, prefix: str) -> ToolCall:
    obj = _DECODE.decode(block.strip())
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        raise ValueError('expected {"name": ..., "arguments": {...}}')
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        _DECODE.decode(args)
        text = args
    elif isinstance(args, dict):
        text = _ENCODE.encode(args).decode()
    else:
        raise ValueError("arguments must be an object")
    return ToolCall(id=new_call_id(prefix), name=obj["name"], arguments=text)


def _convert(value: str, schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind in (None, "string") or (isinstance(kind, list) and "string" in kind):
        return value
    if kind == "integer":
        try:
            return int(value.strip())
        except ValueError:
            return value
    if kind == "number":
        try:
            f = float(value.strip())
        except ValueError:
            return value
        return int(f) if f.is_integer() and "." not in value else f
    if kind == "boolean":
        low = value.strip().lower()
        return {"true": True, "false": False}.get(low, value)
    try:
        return _DECODE.decode(value.strip())
    except msgspec.DecodeError:
        return value


def _xml_calls(block: str, tools: dict[str, ToolSpec], prefix: str) -> list[ToolCall]:
    calls = []
    for name, body in _FUNCTION.findall(block):
        name = name.strip()
        props = tools[name].parameters.get("properties", {}) if name in tools else {}
        args: dict[str, Any] = {}
        for pname, raw in _PARAM.findall(body):
            pname = pname.strip()
            value = raw[1:] if raw.startswith("\n") else raw
            value = value[:-1] if value.endswith("\n") else value
            args[pname] = _convert(value, props.get(pname) if isinstance(props, dict) else None)
        calls.append(ToolCall(id=new_call_id(prefix), name=name, arguments=_ENCODE.encode(args).decode()))
    if not calls:
        raise ValueError("expected <function=NAME>...</function>")
    return calls


def parse_reply(
    text: str,
    parser: ToolParser,
    tools: list[ToolSpec] | None = None,
    *,
    in_think: bool = False,
    id_prefix: str = "call_",
) -> ParsedReply:
    reasoning, rest = split_reasoning(text, in_think=in_think)
    if parser == "none" or ("<tool_call>" not in rest and "<function=" not in rest):
        return ParsedReply(content=rest, reasoning=reasoning)
    calls: list[ToolCall] = []
    try:
        if parser == "qwen":
            blocks = _CALL_BLOCK.findall(rest)
            if not blocks or rest.count("<tool_call>") != len(blocks):
                raise ValueError("unclosed or malformed <tool_call> block")
            calls = [_json_call(b, id_prefix) for b in blocks]
            content = _CALL_BLOCK.sub("", rest)
        else:
            by_name = {t.name: t for t in tools or []}
            calls = _xml_calls(rest, by_name, id_prefix)
            if rest.count("<function=") != len(calls):
                raise ValueError("unclosed <function=...> block")
            content = _FUNCTION.sub("", rest).replace("<tool_call>", "").replace("</tool_call>", "")
    except (ValueError, msgspec.DecodeError) as err:
        return ParsedReply(content=rest, reasoning=reasoning, parse_error=f"{parser} tool call did not parse: {err}")
    return ParsedReply(content=content.strip(), reasoning=reasoning, tool_calls=calls)
