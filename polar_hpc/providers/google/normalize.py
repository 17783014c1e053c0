"""Google generateContent request (Gemini CLI, google-genai) → canonical request."""

from __future__ import annotations

import base64
import binascii
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
    opt_float,
    opt_int,
    reject_media,
    stop_list,
    thinking_kwargs,
)
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, SamplingParams, ToolCall, ToolSpec

SIGNATURE_PREFIX = b"polar:"


def thought_signature(reasoning: str) -> str:
    """Our ``thoughtSignature`` (base64 bytes, as the API types it): the reasoning text, replayable."""
    return base64.b64encode(SIGNATURE_PREFIX + reasoning.encode()).decode()


def _signature_reasoning(v: Any) -> str | None:
    if not isinstance(v, str):
        return None
    try:
        raw = base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        return None
    if raw.startswith(SIGNATURE_PREFIX):
        try:
            return raw[len(SIGNATURE_PREFIX) :].decode()
        except UnicodeDecodeError:
            return None
    return None


def _get(d: dict[str, Any], camel: str, snake: str) -> Any:
    v = d.get(camel)
    return d.get(snake) if v is None else v


def _response_text(resp: Any) -> str:
    if isinstance(resp, dict) and len(resp) == 1:
        (v,) = resp.values()
        if isinstance(v, str):
            return v
    return json_text(resp)


def _system(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    d = as_dict(v, "systemInstruction")
    texts = []
    for i, part in enumerate(as_list(d.get("parts", []), "systemInstruction.parts")):
        t = as_dict(part, f"systemInstruction.parts[{i}]").get("text")
        if t is not None:
            texts.append(as_str(t, f"systemInstruction.parts[{i}].text"))
    return "\n".join(texts)


def _content(c: Any, i: int, out: list[ChatMessage]) -> None:
    p = f"contents[{i}]"
    c = as_dict(c, p)
    role = c.get("role", "user")
    if role not in ("user", "model", "function"):
        raise bad_request(f"expected role user or model, got {role!r}", f"{p}.role")
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ChatMessage] = []
    for j, part in enumerate(as_list(c.get("parts", []), f"{p}.parts")):
        q = f"{p}.parts[{j}]"
        part = as_dict(part, q)
        sig = _signature_reasoning(_get(part, "thoughtSignature", "thought_signature"))
        if sig:
            thoughts.append(sig)
        fc = _get(part, "functionCall", "function_call")
        fr = _get(part, "functionResponse", "function_response")
        if "text" in part:
            text = as_str(part["text"], f"{q}.text")
            if part.get("thought") is True:
                if not sig:
                    thoughts.append(text)
            else:
                texts.append(text)
        elif fc is not None:
            fc = as_dict(fc, f"{q}.functionCall")
            args = fc.get("args", {})
            calls.append(
                ToolCall(
                    id=as_str(fc.get("id") or "", f"{q}.functionCall.id"),
                    name=as_str(fc.get("name"), f"{q}.functionCall.name"),
                    arguments=json_text(as_dict(args if args is not None else {}, f"{q}.functionCall.args")),
                )
            )
        elif fr is not None:
            fr = as_dict(fr, f"{q}.functionResponse")
            name = as_str(fr.get("name", ""), f"{q}.functionResponse.name")
            results.append(
                ChatMessage(
                    role="tool",
                    content=_response_text(fr.get("response", {})),
                    tool_call_id=as_str(fr.get("id") or name, f"{q}.functionResponse.id"),
                    name=name or None,
                )
            )
        elif any(k in part for k in ("inlineData", "inline_data", "fileData", "file_data")):
            reject_media("inline or file data", q)
        elif any(k in part for k in ("executableCode", "codeExecutionResult", "videoMetadata")):
            raise bad_request("code execution and video parts are not supported", q)
    if role == "model":
        out.append(
            ChatMessage(
                role="assistant",
                content="".join(texts),
                reasoning_content="".join(thoughts) if thoughts else None,
                tool_calls=calls,
            )
        )
        return
    if calls:
        raise bad_request("a user turn cannot hold functionCall parts", f"{p}.parts")
    out.extend(results)
    if texts or not results:
        out.append(ChatMessage(role="user", content="\n".join(texts)))


def _tools(raw: Any, notes: list[str]) -> list[ToolSpec]:
    if raw is None:
        return []
    tools: list[ToolSpec] = []
    for i, t in enumerate(as_list(raw, "tools")):
        p = f"tools[{i}]"
        t = as_dict(t, p)
        decls = _get(t, "functionDeclarations", "function_declarations")
        if decls is None:
            notes.append(f"dropped hosted tool {sorted(t)!r}")
            continue
        for j, d in enumerate(as_list(decls, f"{p}.functionDeclarations")):
            q = f"{p}.functionDeclarations[{j}]"
            d = as_dict(d, q)
            params = _get(d, "parametersJsonSchema", "parameters_json_schema")
            if params is None:
                params = d.get("parameters")
            tools.append(
                ToolSpec(
                    name=as_str(d.get("name"), f"{q}.name"),
                    description=as_str(d.get("description", ""), f"{q}.description"),
                    parameters=as_dict(params, f"{q}.parameters") if params is not None else {},
                )
            )
    return tools


def _tool_choice(v: Any) -> str | None:
    if v is None:
        return None
    cfg = _get(as_dict(v, "toolConfig"), "functionCallingConfig", "function_calling_config")
    if cfg is None:
        return None
    cfg = as_dict(cfg, "toolConfig.functionCallingConfig")
    mode = cfg.get("mode", "AUTO")
    if mode == "NONE":
        return "none"
    if mode in ("ANY", "VALIDATED"):
        names = _get(cfg, "allowedFunctionNames", "allowed_function_names") or []
        if isinstance(names, list) and len(names) == 1 and isinstance(names[0], str):
            return f"function:{names[0]}"
        return "required"
    return "auto"


def _thinking(gen: dict[str, Any]) -> bool | None:
    tc = _get(gen, "thinkingConfig", "thinking_config")
    if tc is None:
        return None
    tc = as_dict(tc, "generationConfig.thinkingConfig")
    if _get(tc, "thinkingBudget", "thinking_budget") == 0:
        return False
    inc = _get(tc, "includeThoughts", "include_thoughts")
    return True if inc else None


def normalize(body: dict[str, Any], path_model: str | None, stream: bool) -> Normalized:
    notes: list[str] = []
    raw = body.get("contents")
    if raw is None:
        raise bad_request("missing required field 'contents'", "contents")
    msgs: list[ChatMessage] = []
    for i, c in enumerate(as_list(raw, "contents")):
        _content(c, i, msgs)
    if not msgs:
        raise bad_request("expected at least one content", "contents")
    gen = as_dict(_get(body, "generationConfig", "generation_config") or {}, "generationConfig")
    system = _get(body, "systemInstruction", "system_instruction")
    tools = _tools(body.get("tools"), notes)
    if (_get(gen, "candidateCount", "candidate_count") or 1) != 1:
        notes.append("candidateCount > 1 answered with one candidate")
    thinking = _thinking(gen)
    canonical = CanonicalRequest(
        messages=merge_system([_system(system)], msgs),
        tools=tools,
        tool_choice=_tool_choice(_get(body, "toolConfig", "tool_config")) if tools else None,
        sampling=SamplingParams(
            max_new_tokens=opt_int(gen, "maxOutputTokens", "generationConfig", minimum=0),
            temperature=opt_float(gen, "temperature", "generationConfig"),
            top_p=opt_float(gen, "topP", "generationConfig"),
            top_k=opt_int(gen, "topK", "generationConfig"),
            stop=stop_list(gen.get("stopSequences"), "generationConfig.stopSequences"),
            seed=opt_int(gen, "seed", "generationConfig"),
        ),
        template_kwargs=thinking_kwargs(thinking),
        stream=stream,
        model=path_model or "",
        notes=notes,
    )
    return Normalized(
        canonical=canonical,
        options=ReplyOptions(
            model=path_model or "", include_thoughts=bool(thinking), tool_names=frozenset(t.name for t in tools)
        ),
    )
