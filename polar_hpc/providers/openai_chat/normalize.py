"""OpenAI Chat Completions request → canonical request."""

from __future__ import annotations

from typing import Any

from polar_hpc.providers.errors import bad_request
from polar_hpc.providers.request import (
    Normalized,
    ReplyOptions,
    as_dict,
    as_list,
    as_str,
    merge_system,
    opt_bool,
    opt_float,
    opt_int,
    opt_str,
    parse_arguments,
    reject_media,
    stop_list,
    type_name,
)
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, Role, SamplingParams, ToolCall, ToolSpec

_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant",
                           "tool": "tool"}


def content_text(v: Any, path: str) -> str:
    """A message's content: a string, null, or a list of text parts (joined by a newline)."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    parts = as_list(v, path)
    texts: list[str] = []
    for i, part in enumerate(parts):
        p = f"{path}[{i}]"
        if isinstance(part, str):
            texts.append(part)
            continue
        part = as_dict(part, p)
        kind = part.get("type", "text")
        if kind in ("text", "input_text", "output_text", "refusal"):
            texts.append(as_str(part.get("text", part.get("refusal", "")), f"{p}.text"))
        elif kind in ("image_url", "input_image", "image", "input_audio", "file", "input_file"):
            reject_media(str(kind), p)
        else:
            raise bad_request(f"unknown content part type {kind!r}", p)
    return "\n".join(texts)


def _tools(body: dict[str, Any], notes: list[str]) -> list[ToolSpec]:
    raw = body.get("tools")
    if raw is None:
        return []
    tools: list[ToolSpec] = []
    for i, t in enumerate(as_list(raw, "tools")):
        p = f"tools[{i}]"
        t = as_dict(t, p)
        if t.get("type", "function") != "function":
            notes.append(f"dropped tool of type {t.get('type')!r}")
            continue
        fn = as_dict(t.get("function"), f"{p}.function")
        params = fn.get("parameters")
        tools.append(
            ToolSpec(
                name=as_str(fn.get("name"), f"{p}.function.name"),
                description=opt_str(fn, "description", f"{p}.function") or "",
                parameters=as_dict(params, f"{p}.function.parameters") if params is not None else {},
            )
        )
    return tools


def tool_choice(v: Any, path: str) -> str | None:
    if v is None:
        return None
    if isinstance(v, str):
        if v not in ("auto", "none", "required"):
            raise bad_request(f"expected tool_choice auto, none, required or a function, got {v!r}", path)
        return v
    d = as_dict(v, path)
    fn = d.get("function")
    name = as_dict(fn, f"{path}.function").get("name") if fn is not None else d.get("name")
    return f"function:{as_str(name, f'{path}.function.name')}"


def _message(m: Any, i: int) -> ChatMessage:
    p = f"messages[{i}]"
    m = as_dict(m, p)
    role = m.get("role")
    if role not in _ROLES:
        raise bad_request(f"expected role system, developer, user, assistant or tool, got {role!r}", f"{p}.role")
    msg = ChatMessage(role=_ROLES[role], content=content_text(m.get("content"), f"{p}.content"))
    if role == "assistant":
        reasoning = m.get("reasoning_content", m.get("reasoning"))
        if reasoning is not None:
            msg.reasoning_content = as_str(reasoning, f"{p}.reasoning_content")
        for j, tc in enumerate(as_list(m.get("tool_calls") or [], f"{p}.tool_calls")):
            q = f"{p}.tool_calls[{j}]"
            tc = as_dict(tc, q)
            fn = as_dict(tc.get("function"), f"{q}.function")
            msg.tool_calls.append(
                ToolCall(
                    id=opt_str(tc, "id", q) or "",
                    name=as_str(fn.get("name"), f"{q}.function.name"),
                    arguments=parse_arguments(fn.get("arguments"), f"{q}.function.arguments"),
                )
            )
    elif role == "tool":
        msg.tool_call_id = opt_str(m, "tool_call_id", p) or ""
    name = m.get("name")
    if isinstance(name, str) and role in ("tool", "user"):
        msg.name = name
    return msg


def normalize(body: dict[str, Any]) -> Normalized:
    notes: list[str] = []
    raw_msgs = body.get("messages")
    if raw_msgs is None:
        raise bad_request("missing required field 'messages'", "messages")
    msgs = [_message(m, i) for i, m in enumerate(as_list(raw_msgs, "messages"))]
    if not msgs:
        raise bad_request("expected at least one message", "messages")
    tools = _tools(body, notes)
    kwargs: dict[str, Any] = {}
    ctk = body.get("chat_template_kwargs")
    if ctk is not None:
        kwargs.update(as_dict(ctk, "chat_template_kwargs"))
    effort = opt_str(body, "reasoning_effort", "$")
    if effort is not None and "enable_thinking" not in kwargs:
        kwargs["enable_thinking"] = effort not in ("none", "minimal")
    max_tokens = opt_int(body, "max_completion_tokens", "$", minimum=0)
    if max_tokens is None:
        max_tokens = opt_int(body, "max_tokens", "$", minimum=0)
    so = body.get("stream_options")
    include_usage = bool(as_dict(so, "stream_options").get("include_usage")) if so is not None else False
    model = body.get("model", "")
    if not isinstance(model, str):
        raise bad_request(f"expected a string, got {type_name(model)}", "model")
    canonical = CanonicalRequest(
        messages=merge_system([], msgs),
        tools=tools,
        tool_choice=tool_choice(body.get("tool_choice"), "tool_choice") if tools else None,
        sampling=SamplingParams(
            max_new_tokens=max_tokens,
            temperature=opt_float(body, "temperature", "$"),
            top_p=opt_float(body, "top_p", "$"),
            top_k=opt_int(body, "top_k", "$"),
            stop=stop_list(body.get("stop"), "stop"),
            seed=opt_int(body, "seed", "$"),
        ),
        template_kwargs=kwargs,
        stream=bool(opt_bool(body, "stream", "$")),
        model=model,
        notes=notes,
    )
    return Normalized(
        canonical=canonical,
        options=ReplyOptions(model=model, include_usage=include_usage, tool_names=frozenset(t.name for t in tools)),
    )
