"""Anthropic Messages responses: JSON, and the ``message_start`` … ``message_stop`` event stream."""

from __future__ import annotations

from typing import Any

from polar_hpc.providers.reply import ENC, Reply, arguments_object, signature, sse


def stop_reason(r: Reply) -> str:
    if r.parsed.tool_calls:
        return "tool_use"
    if r.finish == "length":
        return "max_tokens"
    return "stop_sequence" if r.stop_sequence else "end_turn"


def _blocks(r: Reply) -> list[dict[str, Any]]:
    p = r.parsed
    blocks: list[dict[str, Any]] = []
    if p.reasoning:
        blocks.append({"type": "thinking", "thinking": p.reasoning, "signature": signature(p.reasoning)})
    if p.content or not p.tool_calls:
        blocks.append({"type": "text", "text": p.content})
    for c in p.tool_calls:
        blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": arguments_object(c.arguments)})
    return blocks


def _usage(r: Reply, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": r.prompt_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def message(r: Reply, content: list[dict[str, Any]], done: bool) -> dict[str, Any]:
    return {
        "id": f"msg_{r.id}",
        "type": "message",
        "role": "assistant",
        "model": r.model,
        "content": content,
        "stop_reason": stop_reason(r) if done else None,
        "stop_sequence": r.stop_sequence if done else None,
        "usage": _usage(r, r.output_tokens if done else 0),
    }


def json_body(r: Reply) -> bytes:
    return ENC.encode(message(r, _blocks(r), done=True))


def sse_body(r: Reply) -> bytes:
    out = [sse("message_start", {"type": "message_start", "message": message(r, [], done=False)})]
    out.append(sse("ping", {"type": "ping"}))
    for i, b in enumerate(_blocks(r)):
        kind = b["type"]
        start: dict[str, Any]
        if kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": b["thinking"]},
                {"type": "signature_delta", "signature": b["signature"]},
            ]
        elif kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": b["text"]}] if b["text"] else []
        else:
            start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": ENC.encode(b["input"]).decode()}]
        out.append(sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}))
        for d in deltas:
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason(r), "stop_sequence": r.stop_sequence},
                "usage": {"output_tokens": r.output_tokens},
            },
        )
    )
    out.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)
