"""OpenAI Responses: the response object, and ``response.created`` … ``response.completed`` events."""

from __future__ import annotations

from typing import Any

from polar_hpc.providers.openai_responses.normalize import encrypt_reasoning
from polar_hpc.providers.reply import ENC, Reply, arguments_object, sse


def output_items(r: Reply) -> list[dict[str, Any]]:
    p = r.parsed
    items: list[dict[str, Any]] = []
    if p.reasoning:
        item: dict[str, Any] = {
            "type": "reasoning",
            "id": f"rs_{r.id}",
            "summary": [{"type": "summary_text", "text": p.reasoning}],
        }
        if r.options.encrypted_reasoning:
            item["encrypted_content"] = encrypt_reasoning(p.reasoning)
        items.append(item)
    if p.content or not p.tool_calls:
        items.append(
            {
                "type": "message",
                "id": f"msg_{r.id}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": p.content, "annotations": [], "logprobs": []}],
            }
        )
    for i, c in enumerate(p.tool_calls):
        if c.name in r.options.shell_tools:
            action = arguments_object(c.arguments)
            items.append(
                {
                    "type": "local_shell_call",
                    "id": f"lsh_{r.id}_{i}",
                    "call_id": c.id,
                    "status": "completed",
                    "action": {"type": "exec", "command": action.get("command", []), "env": {}, **{
                        k: v for k, v in action.items() if k in ("workdir", "timeout_ms")
                    }},
                }
            )
        else:
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{r.id}_{i}",
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": c.arguments,
                    "status": "completed",
                }
            )
    return items


def response_object(r: Reply, output: list[dict[str, Any]], status: str) -> dict[str, Any]:
    incomplete = status == "incomplete"
    return {
        "id": f"resp_{r.id}",
        "object": "response",
        "created_at": r.created,
        "status": status,
        "model": r.model,
        "output": output,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": (
            {
                "input_tokens": r.prompt_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": r.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": r.prompt_tokens + r.output_tokens,
            }
            if status != "in_progress"
            else None
        ),
    }


def final_status(r: Reply) -> str:
    return "incomplete" if r.finish == "length" and not r.parsed.tool_calls else "completed"


def json_body(r: Reply) -> bytes:
    return ENC.encode(response_object(r, output_items(r), final_status(r)))


def item_events(item: dict[str, Any], idx: int, ev: list[tuple[str, dict[str, Any]]]) -> None:
    kind = item["type"]
    iid = item["id"]
    if kind == "reasoning":
        text = item["summary"][0]["text"]
        ev.append(("response.output_item.added", {"output_index": idx, "item": {**item, "summary": []}}))
        base = {"item_id": iid, "output_index": idx, "summary_index": 0}
        ev.append(("response.reasoning_summary_part.added", {**base, "part": {"type": "summary_text", "text": ""}}))
        ev.append(("response.reasoning_summary_text.delta", {**base, "delta": text}))
        ev.append(("response.reasoning_summary_text.done", {**base, "text": text}))
        ev.append(("response.reasoning_summary_part.done", {**base, "part": {"type": "summary_text", "text": text}}))
    elif kind == "message":
        part = item["content"][0]
        added = {**item, "status": "in_progress", "content": []}
        ev.append(("response.output_item.added", {"output_index": idx, "item": added}))
        base = {"item_id": iid, "output_index": idx, "content_index": 0}
        ev.append(("response.content_part.added", {**base, "part": {**part, "text": ""}}))
        if part["text"]:
            ev.append(("response.output_text.delta", {**base, "delta": part["text"], "logprobs": []}))
        ev.append(("response.output_text.done", {**base, "text": part["text"], "logprobs": []}))
        ev.append(("response.content_part.done", {**base, "part": part}))
    elif kind == "function_call":
        ev.append(("response.output_item.added",
                   {"output_index": idx, "item": {**item, "arguments": "", "status": "in_progress"}}))
        base = {"item_id": iid, "output_index": idx}
        ev.append(("response.function_call_arguments.delta", {**base, "delta": item["arguments"]}))
        ev.append(("response.function_call_arguments.done",
                   {**base, "name": item["name"], "arguments": item["arguments"]}))
    else:
        ev.append(("response.output_item.added", {"output_index": idx, "item": {**item, "status": "in_progress"}}))
    ev.append(("response.output_item.done", {"output_index": idx, "item": item}))


def sse_body(r: Reply) -> bytes:
    items = output_items(r)
    status = final_status(r)
    ev: list[tuple[str, dict[str, Any]]] = [
        ("response.created", {"response": response_object(r, [], "in_progress")}),
        ("response.in_progress", {"response": response_object(r, [], "in_progress")}),
    ]
    for idx, item in enumerate(items):
        item_events(item, idx, ev)
    # A length-cut reply still ends with ``response.completed`` (status "incomplete" inside): Codex turns a
    # ``response.incomplete`` event into a retried stream error and the SDKs' final-response helpers refuse it.
    ev.append(("response.completed", {"response": response_object(r, items, status)}))
    return b"".join(sse(name, {"type": name, "sequence_number": n, **data}) for n, (name, data) in enumerate(ev))


def failed_sse(r_id: str, model: str, created: int, error: dict[str, Any]) -> bytes:
    """A stream that fails at once (``response.failed``), how streaming clients expect errors after the start."""
    resp = {"id": f"resp_{r_id}", "object": "response", "created_at": created, "status": "failed", "model": model,
            "output": [], "error": error, "usage": None}
    return b"".join(
        sse(name, {"type": name, "sequence_number": n, "response": {**resp, "status": st, "error": err}})
        for n, (name, st, err) in enumerate(
            [("response.created", "in_progress", None), ("response.failed", "failed", error)]
        )
    )
