"""Shared pieces of request normalization: typed access with paths in errors, system merging, text parts."""

from __future__ import annotations

from typing import Any

import msgspec

from polar_hpc.providers.errors import bad_request
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage

_JSON = msgspec.json.Encoder(order="deterministic")


class ReplyOptions(msgspec.Struct, kw_only=True):
    """What the response builder needs to know about the request beyond the canonical form."""

    model: str = ""
    include_usage: bool = False
    include_thoughts: bool = True
    encrypted_reasoning: bool = False
    shell_tools: frozenset[str] = frozenset()
    """Responses: function names that stand for a ``local_shell`` tool (answered as ``local_shell_call``)."""
    tool_names: frozenset[str] = frozenset()


class Normalized(msgspec.Struct, kw_only=True):
    canonical: CanonicalRequest
    options: ReplyOptions


def type_name(v: Any) -> str:
    if v is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}.get(
        type(v), type(v).__name__
    )


def as_dict(v: Any, path: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise bad_request(f"expected an object, got {type_name(v)}", path)
    return v


def as_list(v: Any, path: str) -> list[Any]:
    if not isinstance(v, list):
        raise bad_request(f"expected an array, got {type_name(v)}", path)
    return v


def as_str(v: Any, path: str) -> str:
    if not isinstance(v, str):
        raise bad_request(f"expected a string, got {type_name(v)}", path)
    return v


def opt_str(d: dict[str, Any], key: str, path: str) -> str | None:
    v = d.get(key)
    return None if v is None else as_str(v, f"{path}.{key}")


def opt_float(d: dict[str, Any], key: str, path: str) -> float | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise bad_request(f"expected a number, got {type_name(v)}", f"{path}.{key}")
    return float(v)


def opt_int(d: dict[str, Any], key: str, path: str, *, minimum: int | None = None) -> int | None:
    v = d.get(key)
    if v is None:
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int):
        raise bad_request(f"expected an integer, got {type_name(v)}", f"{path}.{key}")
    if minimum is not None and v < minimum:
        raise bad_request(f"expected an integer >= {minimum}, got {v}", f"{path}.{key}")
    return v


def opt_bool(d: dict[str, Any], key: str, path: str) -> bool | None:
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, bool):
        raise bad_request(f"expected a boolean, got {type_name(v)}", f"{path}.{key}")
    return v


def stop_list(v: Any, path: str) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    return [as_str(s, f"{path}[{i}]") for i, s in enumerate(as_list(v, path))]


def json_text(v: Any) -> str:
    """JSON text of a tool-call argument object, stable across calls (key order kept as sent)."""
    return msgspec.json.encode(v).decode()


def parse_arguments(args: Any, path: str) -> str:
    """OpenAI-style ``arguments``: JSON text (kept verbatim when it is an object) or an object."""
    if isinstance(args, str):
        return args
    if isinstance(args, dict):
        return json_text(args)
    if args is None:
        return "{}"
    raise bad_request(f"expected tool-call arguments as a JSON string or object, got {type_name(args)}", path)


def reject_media(kind: str, path: str) -> None:
    raise bad_request(f"{kind} content is not supported by the served model; send text only", path)


def merge_system(system: list[str], messages: list[ChatMessage]) -> list[ChatMessage]:
    """One leading system message holding the top-level and leading system/developer texts, in order, joined by a
    blank line. A system message after the conversation started (Claude Code's mid-conversation notes) stays where
    it was sent: hoisting it would rewrite the start of a history the harness only appends to."""
    texts = [s for s in system if s]
    rest: list[ChatMessage] = []
    for m in messages:
        if m.role == "system" and not rest:
            if m.content:
                texts.append(m.content)
        elif m.role != "system" or m.content:
            rest.append(m)
    if texts:
        return [ChatMessage(role="system", content="\n\n".join(texts)), *rest]
    return rest


def thinking_kwargs(enabled: bool | None) -> dict[str, Any]:
    return {} if enabled is None else {"enable_thinking": enabled}


def append_tool_call(messages: list[ChatMessage], call: Any, reasoning: str | None) -> None:
    """Attach a tool call to the assistant message it belongs to (the last one, if nothing came after it)."""
    if messages and messages[-1].role == "assistant":
        last = messages[-1]
        last.tool_calls.append(call)
        if reasoning and not last.reasoning_content:
            last.reasoning_content = reasoning
        return
    messages.append(ChatMessage(role="assistant", content="", tool_calls=[call], reasoning_content=reasoning))
