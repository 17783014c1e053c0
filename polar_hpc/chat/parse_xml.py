"""Qwen3-coder XML tool calls: ``<function=NAME>`` ``<parameter=P>value</parameter>``… ``</function>``, usually
inside ``<tool_call>…</tool_call>``.

A value ends at the first ``</parameter>`` that is not paired with a ``<parameter=…>`` opened inside the value and
is followed (after blanks) by another parameter, ``</function>``, ``</tool_call>`` or the end of the text: so a
value may hold the format's own markup (a file that is itself a parser fixture). A value whose ``</parameter>``
the model left out ends where a parameter the schema declares and the call has not set yet begins, or at
``</function>``. A call with a malformed name (``<function=x`` without its ``>``, unrendered template syntax) or
cut before its ``</function>`` is not a call: its text stays in the content and the reason is returned; the good
calls beside it are kept.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from polar_hpc.chat.parse_types import typed_value
from polar_hpc.wire.calls import ToolSpec

FUNCTION_OPEN = "<function="
PARAM_OPEN = "<parameter="
PARAM_CLOSE = "</parameter>"
FUNCTION_CLOSE = "</function>"
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
_NAME = re.compile(r"[A-Za-z0-9_.:\-/]+")
_TAGS = re.compile(r"<parameter=([^>\n<]*)>|</parameter>")
_OPEN = re.compile(r"<parameter=([^>\n<]*)>")
_DRIFTED = re.compile(r"</parameter[A-Za-z0-9_]*>?\Z")
_ENCODE = msgspec.json.Encoder()


class XmlCall(msgspec.Struct, kw_only=True, frozen=True):
    start: int
    end: int
    name: str
    arguments: str


def _tag_name(text: str, start: int, prefix: str) -> tuple[str, int] | None:
    """The name of ``prefix…>`` at ``start`` and the index after ``>``; None when malformed."""
    gt = text.find(">", start)
    name = text[start + len(prefix) : gt] if gt >= 0 else ""
    if gt < 0 or "\n" in name or "<" in name:
        return None
    return name.strip(), gt + 1


def _closes_value(text: str, after: int, declared: set[str] | None, assigned: set[str]) -> bool:
    """Whether a ``</parameter>`` ending at ``after`` is structural: followed by the end, ``</function>``,
    ``</tool_call>``, or a parameter the tool declares and the call has not set yet."""
    rest = text[after:].lstrip()
    if not rest or rest.startswith((FUNCTION_CLOSE, CALL_CLOSE)):
        return True
    m = _OPEN.match(rest)
    return m is not None and _settable(m.group(1).strip(), declared, assigned)


def _settable(name: str, declared: set[str] | None, assigned: set[str]) -> bool:
    return name not in assigned and (declared is None or name in declared)


def _value_end(text: str, start: int, declared: set[str] | None, assigned: set[str]) -> tuple[int, int] | None:
    """(end of the value, index after its close) or None when the text ends first."""
    depth = 0
    for m in _TAGS.finditer(text, start):
        if m.group(1) is not None:
            depth += 1
        elif depth:
            depth -= 1
        elif _closes_value(text, m.end(), declared, assigned):
            return m.start(), m.end()
    ends = [k for k in (text.find(FUNCTION_CLOSE, start), text.find(CALL_CLOSE, start)) if k >= 0]
    for m in _OPEN.finditer(text, start, min(ends, default=len(text))):
        if _settable(m.group(1).strip(), declared, assigned):
            return m.start(), m.start()
    return (min(ends), min(ends)) if ends else None


def _undrift(value: str) -> str:
    """``value`` without a drifted close tag at its end (``</parameter1>``, a bare ``</parameter``); linear time
    (no backtracking over a long run of blanks)."""
    body = value.rstrip()
    m = _DRIFTED.search(body)
    return body[: m.start()].rstrip() if m else value


def _unwrap(value: str) -> str:
    """The value without the one newline the template writes on each side of it."""
    if value.startswith("\r\n"):
        value = value[2:]
    elif value.startswith("\n"):
        value = value[1:]
    return value[:-1] if value.endswith("\n") else value


def _call(text: str, i: int, tools: dict[str, ToolSpec]) -> tuple[XmlCall | None, int, str | None]:
    """The call whose ``<function=`` is at ``i``: (call or None, where scanning goes on, why it is not a call)."""
    head = _tag_name(text, i, FUNCTION_OPEN)
    if head is None:
        return None, i + len(FUNCTION_OPEN), "a <function= without its closing '>'"
    name, pos = head
    spec = tools.get(name)
    props = spec.parameters.get("properties") if spec is not None else None
    props = props if isinstance(props, dict) else {}
    declared = set(props) if spec is not None else None
    args: dict[str, Any] = {}
    while True:
        j = len(text) - len(text[pos:].lstrip())
        if text.startswith(PARAM_OPEN, j):
            param = _tag_name(text, j, PARAM_OPEN)
            if param is None:
                return None, j + len(PARAM_OPEN), f"{name}: a <parameter= without its closing '>'"
            pname, vstart = param
            found = _value_end(text, vstart, declared, set(args) | {pname})
            if found is None:
                return None, len(text), f"{name}: the text ends inside <parameter={pname}> (cut by the token limit?)"
            vend, pos = found
            value = _unwrap(text[vstart:vend])
            if vend == pos:  # closed implicitly: a close tag the model let drift is not part of the value
                value = _undrift(value)
            args[pname] = typed_value(value, props.get(pname), pname in props)
            continue
        if text.startswith(FUNCTION_CLOSE, j):
            end = j + len(FUNCTION_CLOSE)
        elif text.startswith(CALL_CLOSE, j):
            end = j
        else:
            nxt = [k for k in (text.find(PARAM_OPEN, j), text.find(FUNCTION_CLOSE, j)) if k >= 0]
            if not nxt:
                return None, len(text), f"{name}: the text ends before </function> (cut by the token limit?)"
            pos = min(nxt)
            continue
        if not _NAME.fullmatch(name):
            return None, end, f"{name!r} is not a function name"
        return XmlCall(start=i, end=end, name=name, arguments=_ENCODE.encode(args).decode()), end, None


def _wrapped(text: str, start: int, end: int) -> tuple[int, int]:
    """The span widened to the ``<tool_call>`` before and the ``</tool_call>`` after it (blanks between)."""
    before = text[:start].rstrip()
    if before.endswith(CALL_OPEN):
        start = len(before) - len(CALL_OPEN)
    after = text[end:]
    rest = after.lstrip()
    if rest.startswith(CALL_CLOSE):
        end += len(after) - len(rest) + len(CALL_CLOSE)
    return start, end


def xml_calls(text: str, tools: dict[str, ToolSpec]) -> tuple[list[XmlCall], list[str]]:
    """The calls in ``text`` (their spans cover the ``<tool_call>`` wrapper) and why others did not parse."""
    calls: list[XmlCall] = []
    errors: list[str] = []
    pos = 0
    while (i := text.find(FUNCTION_OPEN, pos)) >= 0:
        call, pos, why = _call(text, i, tools)
        if call is None:
            errors.append(why or "malformed")
            continue
        start, end = _wrapped(text, call.start, call.end)
        calls.append(msgspec.structs.replace(call, start=start, end=end))
        pos = end
    return calls, errors
