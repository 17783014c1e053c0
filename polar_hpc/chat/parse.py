"""Reasoning and tool calls out of the sampled text.

Formats: ``<think>…</think>`` (also closed-only when the prompt opened it, and unclosed before a tool call),
Qwen JSON ``<tool_call>{"name", "arguments"}</tool_call>``, Qwen3-coder XML
``<tool_call><function=NAME><parameter=P>value</parameter></function></tool_call>`` (:mod:`.parse_xml`).
Each call is parsed on its own: one that does not parse stays in the content as text, the good ones beside it are
kept, and ``parse_error`` says what was left as text and why. Where this differs from SGLang's and vLLM's parsers,
``docs/parsing.md`` says so (the cases are in ``tests/unit/proxy/conformance/``).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import msgspec

from polar_hpc.chat.parse_xml import CALL_CLOSE, CALL_OPEN, FUNCTION_OPEN, xml_calls
from polar_hpc.config.run import ToolParser
from polar_hpc.wire.calls import ToolCall, ToolSpec

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
_DECODE = msgspec.json.Decoder()
_EXTENT = json.JSONDecoder()


class ParsedReply(msgspec.Struct, kw_only=True):
    content: str = ""
    reasoning: str | None = None
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    parse_error: str | None = None
    """Tool-call syntax that did not parse (left in ``content`` as text) and why; None when all of it parsed."""


class _JsonCall(msgspec.Struct):
    name: str
    arguments: msgspec.Raw = msgspec.Raw()
    parameters: msgspec.Raw = msgspec.Raw()


_CALL = msgspec.json.Decoder(_JsonCall)


def new_call_id(prefix: str = "call_") -> str:
    return prefix + secrets.token_urlsafe(12).replace("-", "x").replace("_", "y")


def split_reasoning(text: str, *, in_think: bool = False) -> tuple[str | None, str]:
    """(reasoning, rest). ``in_think``: the prompt ended inside an opened ``<think>`` (a ``<think>`` the model
    writes again there is not reasoning)."""
    body = text
    stripped = text.lstrip()
    if stripped.startswith(THINK_OPEN):
        body = stripped[len(THINK_OPEN) :]
    elif not in_think and THINK_CLOSE not in text[: _first_call(text)]:  # a </think> inside a call is a value's
        return None, text
    end = body.find(THINK_CLOSE)
    if end >= 0:
        reasoning, rest = body[:end], body[end + len(THINK_CLOSE) :]
    else:
        cut = _first_call(body)
        reasoning, rest = body[:cut], body[cut:]
    return reasoning.strip("\n"), rest.lstrip("\n")


def _first_call(text: str) -> int:
    """Where tool-call syntax first begins (``len(text)`` when nowhere)."""
    starts = [k for k in (text.find(CALL_OPEN), text.find(FUNCTION_OPEN)) if k >= 0]
    return min(starts) if starts else len(text)


def _arguments(call: _JsonCall) -> str:
    raw = call.arguments if len(call.arguments) else call.parameters
    if not len(raw):
        return "{}"
    text = bytes(raw).decode()
    value: Any = _DECODE.decode(text)
    if isinstance(value, str):  # arguments the model serialized itself
        text, value = value, _DECODE.decode(value)
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, got {type(value).__name__}")
    return text


def _array_calls(body: str, errors: list[str]) -> list[_JsonCall]:
    """The call objects of a JSON array in one block (what SGLang's Qwen 2.5 detector takes); an entry that is
    not one is reported in ``errors``."""
    out = []
    for k, item in enumerate(_DECODE.decode(body)):
        try:
            out.append(_CALL.decode(msgspec.json.encode(item)))
        except msgspec.DecodeError as err:
            errors.append(f"array entry {k}: {err}")
    return out


def _json_calls(text: str, prefix: str) -> tuple[list[tuple[int, int, ToolCall]], list[str]]:
    """Each ``<tool_call>`` block: its JSON object extends as far as the JSON does (a string in it may hold
    ``</tool_call>``); then ``</tool_call>``, or nothing when the text ends or the next block begins."""
    calls: list[tuple[int, int, ToolCall]] = []
    errors: list[str] = []
    pos = 0
    while (i := text.find(CALL_OPEN, pos)) >= 0:
        start = i + len(CALL_OPEN)
        body_at = len(text) - len(text[start:].lstrip())
        close = text.find(CALL_CLOSE, start)
        try:
            _, obj_end = _EXTENT.raw_decode(text, body_at)
            after = text[obj_end:].lstrip()
            if after and not after.startswith((CALL_CLOSE, CALL_OPEN)):
                raise ValueError(f"text after the JSON object: {after[:40]!r}")
            end = len(text) - len(after) + (len(CALL_CLOSE) if after.startswith(CALL_CLOSE) else 0)
            body = text[body_at:obj_end]
            found = _array_calls(body, errors) if body.startswith("[") else [_CALL.decode(body)]
            if not found:
                raise ValueError("a JSON array holding no call object")
            calls += [(i, end, ToolCall(id=new_call_id(prefix), name=c.name, arguments=_arguments(c))) for c in found]
            pos = end
        except (ValueError, msgspec.DecodeError) as err:
            errors.append(str(err).splitlines()[0][:200])
            pos = close + len(CALL_CLOSE) if close >= 0 else len(text)
    return calls, errors


def _error(parser: str, errors: list[str], parsed: int) -> str | None:
    if not errors:
        return None
    kept = f"; {parsed} other call(s) parsed" if parsed else ""
    return f"{parser} tool call did not parse ({len(errors)} left as text{kept}): " + "; ".join(errors)


def parse_reply(
    text: str,
    parser: ToolParser,
    tools: list[ToolSpec] | None = None,
    *,
    in_think: bool = False,
    id_prefix: str = "call_",
) -> ParsedReply:
    reasoning, rest = split_reasoning(text, in_think=in_think)
    if parser == "none" or (CALL_OPEN not in rest and FUNCTION_OPEN not in rest):
        return ParsedReply(content=rest, reasoning=reasoning)
    spans: list[tuple[int, int, ToolCall]]
    if parser == "qwen":
        spans, errors = _json_calls(rest, id_prefix)
    else:
        found, errors = xml_calls(rest, {t.name: t for t in tools or []})
        spans = [(c.start, c.end, ToolCall(id=new_call_id(id_prefix), name=c.name, arguments=c.arguments))
                 for c in found]
    pieces, pos = [], 0
    for start, end, _ in spans:
        pieces.append(rest[pos:start])
        pos = end
    pieces.append(rest[pos:])
    content = "".join(pieces).strip() if spans else rest
    return ParsedReply(content=content, reasoning=reasoning, tool_calls=[c for _, _, c in spans],
                       parse_error=_error(parser, errors, len(spans)))
