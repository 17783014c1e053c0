"""OpenAI Chat Completions responses: JSON, and chunks + ``[DONE]`` when streaming."""

from __future__ import annotations

from typing import Any

from polar_hpc.providers.reply import ENC, Reply, sse


def _finish(r: Reply) -> str:
    if r.parsed.tool_calls:
        return "tool_calls"
    return "length" if r.finish == "length" else "stop"


def _usage(r: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": r.prompt_tokens,
        "completion_tokens": r.output_tokens,
        "total_tokens": r.prompt_tokens + r.output_tokens,
    }


def tool_calls(r: Reply, indexed: bool) -> list[dict[str, Any]]:
    out = []
    for i, c in enumerate(r.parsed.tool_calls):
        d: dict[str, Any] = {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
        if indexed:
            d["index"] = i
        out.append(d)
    return out


def chunk(completion_id: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    """One ``chat.completion.chunk`` event (the synthesized and the live stream's)."""
    return sse(None, {"id": f"chatcmpl-{completion_id}", "object": "chat.completion.chunk", "created": created,
                      "model": model,
                      "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})


def tail(r: Reply) -> bytes:
    """The end of a stream: the finish chunk, the usage chunk when asked for, ``[DONE]``."""
    out = chunk(r.id, r.created, r.model, {}, _finish(r))
    if r.options.include_usage:
        out += sse(None, {"id": f"chatcmpl-{r.id}", "object": "chat.completion.chunk", "created": r.created,
                          "model": r.model, "choices": [], "usage": _usage(r)})
    return out + b"data: [DONE]\n\n"


def json_body(r: Reply) -> bytes:
    p = r.parsed
    msg: dict[str, Any] = {"role": "assistant", "content": p.content if (p.content or not p.tool_calls) else None}
    if p.reasoning:
        msg["reasoning_content"] = p.reasoning
    if p.tool_calls:
        msg["tool_calls"] = tool_calls(r, indexed=False)
    return ENC.encode(
        {
            "id": f"chatcmpl-{r.id}",
            "object": "chat.completion",
            "created": r.created,
            "model": r.model,
            "choices": [{"index": 0, "message": msg, "logprobs": None, "finish_reason": _finish(r)}],
            "usage": _usage(r),
        }
    )


def sse_body(r: Reply) -> bytes:
    p = r.parsed
    delta: dict[str, Any] = {"role": "assistant", "content": p.content}
    if p.reasoning:
        delta["reasoning_content"] = p.reasoning
    if p.tool_calls:
        delta["tool_calls"] = tool_calls(r, indexed=True)
    return chunk(r.id, r.created, r.model, delta) + tail(r)
