"""Anthropic Messages request → canonical request."""

from __future__ import annotations

from typing import Any

from polar_hpc.providers.errors import bad_request
from polar_hpc.providers.request import (
    Normalized,
    ReplyOptions,
    as_dict,
    as_list,
    as_str,
    json_text,
    merge_system,
    opt_bool,
    opt_float,
    opt_int,
    opt_str,
    reject_media,
    stop_list,
    thinking_kwargs,
    type_name,
)
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, SamplingParams, ToolCall, ToolSpec

_BILLING = "x-anthropic-billing-header:"
_IGNORED_BLOCKS = {
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "container_upload",
    "search_result",
}


def _text_blocks(v: Any, path: str) -> str:
    """Text of a string or a list of text blocks (tool results, system), joined by a newline."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    texts: list[str] = []
    for i, b in enumerate(as_list(v, path)):
        p = f"{path}[{i}]"
        b = as_dict(b, p)
        kind = b.get("type")
        if kind == "text":
            texts.append(as_str(b.get("text"), f"{p}.text"))
        elif kind in ("image", "document"):
            reject_media(str(kind), p)
        elif kind in _IGNORED_BLOCKS:
            continue
        else:
            raise bad_request(f"expected a text block, got type {kind!r}", p)
    return "\n".join(texts)


def _system(v: Any) -> str:
    text = _text_blocks(v, "system")
    if text.startswith(_BILLING):
        # Claude Code's first system line carries a per-request hash that would break prefix chains.
        text = text.split("\n", 1)[1] if "\n" in text else ""
    return text


def _message(m: Any, i: int, out: list[ChatMessage], notes: list[str]) -> None:
    p = f"messages[{i}]"
    m = as_dict(m, p)
    role = m.get("role")
    if role not in ("user", "assistant", "system"):
        raise bad_request(f"expected role user, assistant or system, got {role!r}", f"{p}.role")
    content = m.get("content")
    if isinstance(content, str) or content is None:
        out.append(ChatMessage(role=role, content=content or ""))
        return
    blocks = as_list(content, f"{p}.content")
    texts: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    results: list[ChatMessage] = []
    for j, b in enumerate(blocks):
        q = f"{p}.content[{j}]"
        b = as_dict(b, q)
        kind = b.get("type")
        if kind == "text":
            texts.append(as_str(b.get("text"), f"{q}.text"))
        elif kind == "thinking":
            reasoning.append(as_str(b.get("thinking", ""), f"{q}.thinking"))
        elif kind == "tool_use":
            inp = b.get("input", {})
            calls.append(
                ToolCall(
                    id=as_str(b.get("id", ""), f"{q}.id"),
                    name=as_str(b.get("name"), f"{q}.name"),
                    arguments=json_text(as_dict(inp, f"{q}.input")),
                )
            )
        elif kind == "tool_result":
            text = _text_blocks(b.get("content"), f"{q}.content")
            if opt_bool(b, "is_error", q):
                text = f"[Tool Error] {text}"
            results.append(
                ChatMessage(role="tool", content=text,
                            tool_call_id=as_str(b.get("tool_use_id", ""), f"{q}.tool_use_id"))
            )
        elif kind in ("image", "document"):
            reject_media(str(kind), q)
        elif kind in _IGNORED_BLOCKS:
            notes.append(f"ignored {kind} block at {q}")
        else:
            raise bad_request(f"unknown content block type {kind!r}", q)
    if role == "assistant":
        out.append(
            ChatMessage(
                role="assistant",
                content="\n".join(texts),
                reasoning_content="\n".join(reasoning) if reasoning else None,
                tool_calls=calls,
            )
        )
        return
    if calls or reasoning:
        raise bad_request(f"{role} message cannot hold tool_use or thinking blocks", f"{p}.content")
    out.extend(results)
    if texts or not results:
        out.append(ChatMessage(role=role, content="\n".join(texts)))


def _tools(body: dict[str, Any], notes: list[str]) -> list[ToolSpec]:
    raw = body.get("tools")
    if raw is None:
        return []
    tools: list[ToolSpec] = []
    for i, t in enumerate(as_list(raw, "tools")):
        p = f"tools[{i}]"
        t = as_dict(t, p)
        schema = t.get("input_schema")
        if schema is None:
            notes.append(f"dropped server tool {t.get('type', t.get('name'))!r}")
            continue
        tools.append(
            ToolSpec(
                name=as_str(t.get("name"), f"{p}.name"),
                description=opt_str(t, "description", p) or "",
                parameters=as_dict(schema, f"{p}.input_schema"),
            )
        )
    return tools


def _tool_choice(v: Any) -> str | None:
    if v is None:
        return None
    d = as_dict(v, "tool_choice")
    kind = d.get("type")
    if kind == "auto":
        return "auto"
    if kind == "any":
        return "required"
    if kind == "none":
        return "none"
    if kind == "tool":
        return f"function:{as_str(d.get('name'), 'tool_choice.name')}"
    raise bad_request(f"expected tool_choice type auto, any, none or tool, got {kind!r}", "tool_choice.type")


def _thinking(v: Any) -> bool | None:
    if v is None:
        return None
    kind = as_dict(v, "thinking").get("type")
    if kind in ("enabled", "adaptive"):
        return True
    if kind == "disabled":
        return False
    raise bad_request(f"expected thinking type enabled, adaptive or disabled, got {kind!r}", "thinking.type")


def normalize(body: dict[str, Any]) -> Normalized:
    notes: list[str] = []
    raw = body.get("messages")
    if raw is None:
        raise bad_request("missing required field 'messages'", "messages")
    msgs: list[ChatMessage] = []
    for i, m in enumerate(as_list(raw, "messages")):
        _message(m, i, msgs, notes)
    if not msgs:
        raise bad_request("expected at least one message", "messages")
    tools = _tools(body, notes)
    model = body.get("model", "")
    if not isinstance(model, str):
        raise bad_request(f"expected a string, got {type_name(model)}", "model")
    canonical = CanonicalRequest(
        messages=merge_system([_system(body.get("system"))], msgs),
        tools=tools,
        tool_choice=_tool_choice(body.get("tool_choice")) if tools else None,
        sampling=SamplingParams(
            max_new_tokens=opt_int(body, "max_tokens", "$", minimum=0),
            temperature=opt_float(body, "temperature", "$"),
            top_p=opt_float(body, "top_p", "$"),
            top_k=opt_int(body, "top_k", "$"),
            stop=stop_list(body.get("stop_sequences"), "stop_sequences"),
        ),
        template_kwargs=thinking_kwargs(_thinking(body.get("thinking"))),
        stream=bool(opt_bool(body, "stream", "$")),
        model=model,
        notes=notes,
    )
    return Normalized(canonical=canonical,
                      options=ReplyOptions(model=model, tool_names=frozenset(t.name for t in tools)))
