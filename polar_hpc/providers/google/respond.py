"""Google generateContent responses: JSON, and ``data:`` chunks for ``:streamGenerateContent?alt=sse``."""

from __future__ import annotations

from typing import Any

from polar_hpc.providers.google.normalize import thought_signature
from polar_hpc.providers.reply import ENC, Reply, arguments_object, sse

KEEPALIVE = b"\n"
"""google-genai's JS stream parser (Gemini CLI) only reads ``data:`` frames at the head of its buffer (leading
whitespace allowed): an SSE comment there blocks every later frame and the call fails ("Incomplete JSON segment
at the end"), so Gemini CLI retried every call slower than the keep-alive interval. A blank line is harmless."""


def finish_reason(r: Reply) -> str:
    return "MAX_TOKENS" if r.finish == "length" and not r.parsed.tool_calls else "STOP"


def parts(r: Reply, text: str, thoughts: bool) -> list[dict[str, Any]]:
    """The reply's parts with ``text`` as its text (the whole content, or the rest of a live stream's)."""
    p = r.parsed
    out: list[dict[str, Any]] = []
    if p.reasoning and thoughts:
        out.append({"text": p.reasoning, "thought": True})
    if text or not p.tool_calls:
        out.append({"text": text})
    for c in p.tool_calls:
        out.append({"functionCall": {"id": c.id, "name": c.name, "args": arguments_object(c.arguments)}})
    if p.reasoning:
        # Carries the reasoning back to us on replay (clients return the signature, not always the thought).
        target = next((x for x in out if "functionCall" in x), out[-1])
        target["thoughtSignature"] = thought_signature(p.reasoning)
    return out


def usage(r: Reply) -> dict[str, int]:
    return {
        "promptTokenCount": r.prompt_tokens,
        "candidatesTokenCount": r.output_tokens,
        "totalTokenCount": r.prompt_tokens + r.output_tokens,
    }


def body(response_id: str, model: str, content: list[dict[str, Any]], finish: str | None = None,
         usage_metadata: dict[str, int] | None = None) -> dict[str, Any]:
    """A ``GenerateContentResponse`` (one stream chunk, or the whole reply)."""
    cand: dict[str, Any] = {"content": {"role": "model", "parts": content}, "index": 0}
    if finish is not None:
        cand["finishReason"] = finish
    out: dict[str, Any] = {"candidates": [cand]}
    if usage_metadata is not None:
        out["usageMetadata"] = usage_metadata
    out["modelVersion"] = model
    out["responseId"] = response_id
    return out


def _body(r: Reply) -> dict[str, Any]:
    return body(r.id, r.model, parts(r, r.parsed.content, r.options.include_thoughts), finish_reason(r), usage(r))


def json_body(r: Reply) -> bytes:
    return ENC.encode(_body(r))


def sse_body(r: Reply) -> bytes:
    return sse(None, _body(r))
