"""Google generateContent responses: JSON, and ``data:`` chunks for ``:streamGenerateContent?alt=sse``."""

from __future__ import annotations

from typing import Any

from polar_hpc.proxy.normalize.google import thought_signature
from polar_hpc.proxy.respond.common import ENC, Reply, arguments_object, sse


def _finish(r: Reply) -> str:
    return "MAX_TOKENS" if r.finish == "length" and not r.parsed.tool_calls else "STOP"


def _body(r: Reply) -> dict[str, Any]:
    p = r.parsed
    parts: list[dict[str, Any]] = []
    if p.reasoning and r.options.include_thoughts:
        parts.append({"text": p.reasoning, "thought": True})
    if p.content or not p.tool_calls:
        parts.append({"text": p.content})
    calls = []
    for c in p.tool_calls:
        fc = {"id": c.id, "name": c.name, "args": arguments_object(c.arguments)}
        calls.append(fc)
        parts.append({"functionCall": fc})
    if p.reasoning:
        # Carries the reasoning back to us on replay (clients return the signature, not always the thought).
        target = next((x for x in parts if "functionCall" in x), parts[-1])
        target["thoughtSignature"] = thought_signature(p.reasoning)
    usage = {
        "promptTokenCount": r.prompt_tokens,
        "candidatesTokenCount": r.output_tokens,
        "totalTokenCount": r.prompt_tokens + r.output_tokens,
    }
    body: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": _finish(r), "index": 0}],
        "usageMetadata": usage,
        "modelVersion": r.model,
        "responseId": r.id,
    }
    return body


def json_body(r: Reply) -> bytes:
    return ENC.encode(_body(r))


def sse_body(r: Reply) -> bytes:
    return sse(None, _body(r))
