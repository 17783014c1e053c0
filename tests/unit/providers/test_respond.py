"""Synthesized SSE streams have each provider's full event sequence."""

from __future__ import annotations

import msgspec

from polar_hpc.chat.parse import ParsedReply
from polar_hpc.providers import provider_api
from polar_hpc.providers.reply import Reply
from polar_hpc.providers.request import ReplyOptions
from polar_hpc.wire.calls import ToolCall


def reply(**kw) -> Reply:  # type: ignore[no-untyped-def]
    parsed = ParsedReply(content="Hi", reasoning="why",
                         tool_calls=[ToolCall(id="call_1", name="f", arguments='{"a":1}')])
    base = dict(id="abc", model="m", created=1, parsed=parsed, finish="stop", prompt_tokens=5, output_tokens=3,
                options=ReplyOptions(model="m", include_usage=True, include_thoughts=True))
    base.update(kw)
    return Reply(**base)  # type: ignore[arg-type]


def events(data: bytes) -> list[tuple[str | None, object]]:
    out = []
    for frame in data.decode().split("\n\n"):
        if not frame:
            continue
        name = None
        for line in frame.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                out.append((name, line[6:] if line[6:] == "[DONE]" else msgspec.json.decode(line[6:])))
    return out


def test_anthropic_sequence() -> None:
    ev = events(provider_api("anthropic").sse_body(reply()))
    names = [e[0] for e in ev]
    assert names == ["message_start", "ping",
                     "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
                     "content_block_start", "content_block_delta", "content_block_stop",
                     "content_block_start", "content_block_delta", "content_block_stop",
                     "message_delta", "message_stop"]
    assert ev[3][1]["delta"]["type"] == "thinking_delta" and ev[4][1]["delta"]["type"] == "signature_delta"  # type: ignore[index]
    assert ev[10][1]["delta"] == {"type": "input_json_delta", "partial_json": '{"a":1}'}  # type: ignore[index]
    assert ev[-2][1]["delta"]["stop_reason"] == "tool_use"  # type: ignore[index]


def test_anthropic_empty_reply_has_one_text_block() -> None:
    r = reply(parsed=ParsedReply(content=""), finish="length")
    ev = events(provider_api("anthropic").sse_body(r))
    assert [e[1]["content_block"]["type"] for e in ev if e[0] == "content_block_start"] == ["text"]  # type: ignore[index]
    assert ev[-2][1]["delta"]["stop_reason"] == "max_tokens"  # type: ignore[index]


def test_responses_sequence() -> None:
    ev = events(provider_api("openai_responses").sse_body(reply()))
    names = [e[0] for e in ev]
    assert names[:2] == ["response.created", "response.in_progress"] and names[-1] == "response.completed"
    assert "response.reasoning_summary_text.delta" in names and "response.output_text.done" in names
    assert "response.function_call_arguments.done" in names
    assert [e[1]["sequence_number"] for e in ev] == list(range(len(ev)))  # type: ignore[index]
    assert [o["type"] for o in ev[-1][1]["response"]["output"]] == ["reasoning", "message", "function_call"]  # type: ignore[index]


def test_responses_length_is_incomplete() -> None:
    ev = events(provider_api("openai_responses").sse_body(reply(parsed=ParsedReply(content="x"), finish="length")))
    assert ev[-1][0] == "response.completed" and ev[-1][1]["response"]["status"] == "incomplete"  # type: ignore[index]
    assert ev[-1][1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}  # type: ignore[index]


def test_chat_chunks_and_done() -> None:
    ev = events(provider_api("openai_chat").sse_body(reply()))
    assert ev[-1][1] == "[DONE]"
    assert ev[1][1]["choices"][0]["finish_reason"] == "tool_calls"  # type: ignore[index]
    assert ev[2][1]["usage"]["total_tokens"] == 8  # type: ignore[index]
    no_usage = events(provider_api("openai_chat").sse_body(reply(options=ReplyOptions(model="m"))))
    assert len(no_usage) == 3


def test_google_chunk() -> None:
    (ev,) = events(provider_api("google").sse_body(reply(finish="length", parsed=ParsedReply(content="x"))))
    assert ev[1]["candidates"][0]["finishReason"] == "MAX_TOKENS"  # type: ignore[index]
