"""OpenAI Responses request (Codex) → canonical request."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from polar_hpc.providers.errors import bad_request
from polar_hpc.providers.openai_chat.normalize import content_text
from polar_hpc.providers.request import (
    Normalized,
    ReplyOptions,
    append_tool_call,
    as_dict,
    as_list,
    as_str,
    json_text,
    merge_system,
    opt_bool,
    opt_float,
    opt_int,
    opt_str,
    parse_arguments,
    type_name,
)
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, Role, SamplingParams, ToolCall, ToolSpec

ENCRYPTED_PREFIX = "polar:"
SHELL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "array", "items": {"type": "string"}},
        "workdir": {"type": "string"},
        "timeout_ms": {"type": "integer"},
    },
    "required": ["command"],
}
_ROLES: dict[str, Role] = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def encrypt_reasoning(text: str) -> str:
    """Our ``encrypted_content``: the reasoning text itself, so a replayed item restores it exactly."""
    return ENCRYPTED_PREFIX + base64.b64encode(text.encode()).decode()


def _reasoning_text(item: dict[str, Any], path: str) -> str:
    enc = item.get("encrypted_content")
    if isinstance(enc, str) and enc.startswith(ENCRYPTED_PREFIX):
        try:
            return base64.b64decode(enc[len(ENCRYPTED_PREFIX) :], validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise bad_request("encrypted_content was not written by this proxy", f"{path}.encrypted_content") from None
    parts = item.get("content") or item.get("summary") or []
    texts = []
    for i, s in enumerate(as_list(parts, f"{path}.summary")):
        texts.append(as_str(as_dict(s, f"{path}.summary[{i}]").get("text", ""), f"{path}.summary[{i}].text"))
    return "\n".join(texts)


def _output_text(v: Any, path: str) -> str:
    if isinstance(v, str) or v is None:
        return v or ""
    return content_text(v, path)


def _input(items: Any, msgs: list[ChatMessage], notes: list[str]) -> None:
    if isinstance(items, str):
        msgs.append(ChatMessage(role="user", content=items))
        return
    pending_reasoning: str | None = None
    for i, item in enumerate(as_list(items, "input")):
        p = f"input[{i}]"
        item = as_dict(item, p)
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            if role not in _ROLES:
                raise bad_request(f"expected role user, assistant, system or developer, got {role!r}", f"{p}.role")
            msg = ChatMessage(role=_ROLES[role], content=content_text(item.get("content"), f"{p}.content"))
            if role == "assistant" and pending_reasoning is not None:
                msg.reasoning_content, pending_reasoning = pending_reasoning, None
            msgs.append(msg)
        elif kind == "reasoning":
            pending_reasoning = _reasoning_text(item, p)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            if kind == "function_call":
                name = as_str(item.get("name"), f"{p}.name")
                args = parse_arguments(item.get("arguments"), f"{p}.arguments")
            elif kind == "custom_tool_call":
                name = as_str(item.get("name"), f"{p}.name")
                args = json_text({"input": as_str(item.get("input", ""), f"{p}.input")})
            else:
                action = as_dict(item.get("action", {}), f"{p}.action")
                name, args = "shell", json_text({k: v for k, v in action.items() if k != "type"})
            call_id = item.get("call_id", item.get("id", ""))
            call = ToolCall(id=as_str(call_id, f"{p}.call_id"), name=name, arguments=args)
            append_tool_call(msgs, call, pending_reasoning)
            pending_reasoning = None
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            msgs.append(
                ChatMessage(
                    role="tool",
                    content=_output_text(item.get("output"), f"{p}.output"),
                    tool_call_id=as_str(item.get("call_id", item.get("id", "")), f"{p}.call_id"),
                )
            )
        elif kind in ("item_reference", "web_search_call", "file_search_call", "image_generation_call", "compaction"):
            notes.append(f"ignored input item of type {kind!r} at {p}")
        else:
            raise bad_request(f"unknown input item type {kind!r}", p)


def _function(t: dict[str, Any], p: str) -> ToolSpec:
    params = t.get("parameters")
    return ToolSpec(
        name=as_str(t.get("name"), f"{p}.name"),
        description=opt_str(t, "description", p) or "",
        parameters=as_dict(params, f"{p}.parameters") if params is not None else {},
    )


def _tools(raw: Any, notes: list[str], shell: set[str], path: str = "tools") -> list[ToolSpec]:
    if raw is None:
        return []
    tools: list[ToolSpec] = []
    for i, t in enumerate(as_list(raw, path)):
        p = f"{path}[{i}]"
        t = as_dict(t, p)
        kind = t.get("type")
        if kind == "function":
            tools.append(_function(t, p))
        elif kind == "namespace":
            notes.append(f"flattened namespace tool {t.get('name')!r}")
            tools.extend(_tools(t.get("tools", []), notes, shell, f"{p}.tools"))
        elif kind in ("local_shell", "shell"):
            shell.add("shell")
            tools.append(ToolSpec(name="shell", description="Run a shell command.", parameters=SHELL_SCHEMA))
        elif kind == "custom":
            desc = opt_str(t, "description", p) or ""
            schema = {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}
            tools.append(ToolSpec(name=as_str(t.get("name"), f"{p}.name"), description=desc, parameters=schema))
        else:
            notes.append(f"dropped hosted tool {kind!r}")
    return tools


def _tool_choice(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, str):
        if v not in ("auto", "none", "required"):
            raise bad_request(f"expected tool_choice auto, none, required or a tool, got {v!r}", "tool_choice")
        return v
    d = as_dict(v, "tool_choice")
    kind = d.get("type")
    if kind in ("local_shell", "shell"):
        return "function:shell"
    name = d.get("name")
    if kind in ("function", "custom") and isinstance(name, str):
        return f"function:{name}"
    return "required" if kind else "auto"


def normalize(body: dict[str, Any]) -> Normalized:
    notes: list[str] = []
    msgs: list[ChatMessage] = []
    if "input" not in body:
        raise bad_request("missing required field 'input'", "input")
    _input(body.get("input"), msgs, notes)
    if not msgs:
        raise bad_request("expected at least one input item", "input")
    shell: set[str] = set()
    tools = _tools(body.get("tools"), notes, shell)
    reasoning = body.get("reasoning")
    kwargs: dict[str, Any] = {}
    if reasoning is not None:
        effort = as_dict(reasoning, "reasoning").get("effort")
        if effort is not None:
            kwargs["enable_thinking"] = effort not in ("none", "minimal")
    include = body.get("include") or []
    model = body.get("model", "")
    if not isinstance(model, str):
        raise bad_request(f"expected a string, got {type_name(model)}", "model")
    instructions = opt_str(body, "instructions", "$")
    canonical = CanonicalRequest(
        messages=merge_system([instructions or ""], msgs),
        tools=tools,
        tool_choice=_tool_choice(body.get("tool_choice")) if tools else None,
        sampling=SamplingParams(
            max_new_tokens=opt_int(body, "max_output_tokens", "$", minimum=0),
            temperature=opt_float(body, "temperature", "$"),
            top_p=opt_float(body, "top_p", "$"),
            top_k=opt_int(body, "top_k", "$"),
        ),
        template_kwargs=kwargs,
        stream=bool(opt_bool(body, "stream", "$")),
        model=model,
        notes=notes,
    )
    options = ReplyOptions(
        model=model,
        encrypted_reasoning="reasoning.encrypted_content" in as_list(include, "include"),
        shell_tools=frozenset(shell),
        tool_names=frozenset(t.name for t in tools),
    )
    return Normalized(canonical=canonical, options=options)
