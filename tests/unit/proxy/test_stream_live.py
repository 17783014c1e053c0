"""Streaming from the engine as it samples (``proxy.live``), through the official Python SDKs, against a slow
scripted engine (a stand-in at the engine boundary that streams one token per chunk): deltas arrive while the
engine is still sampling, keep-alives in each provider's own form come before the first token, a tool call
comes whole and parsed, the record equals what the non-streaming path records, and a client that goes away
aborts the engine request and leaves an ``abort`` record."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import msgspec
import numpy as np
import openai
import pytest
from google.genai import types as gtypes

from tests.fixtures.proxy import ProxyHandle
from tests.fixtures.sdk_clients import SdkClients
from tests.fixtures.waits import async_wait_for

TOOL_TEXT = ('<think>\nI should list the files first.\n</think>\n\nLet me look at them.\n<tool_call>\n'
             '{"name": "bash", "arguments": {"command": "ls -la"}}\n</tool_call>')
BAD_TOOL = 'Trying now. <tool_call>\n{"name": "bash", "arguments": {"command": </tool_call>'
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
MSGS = [{"role": "user", "content": "list files"}]


def slow(h: ProxyHandle, text: str, first: float = 0.5, per_token: float = 0.005) -> None:
    h.engine.script = [text]
    h.engine.first_delay_s = first  # type: ignore[attr-defined]
    h.engine.token_delay_s = per_token  # type: ignore[attr-defined]


def the_record(h: ProxyHandle):  # type: ignore[no-untyped-def]
    recs = h.server.close_session(h.api_key)  # type: ignore[attr-defined]
    assert len(recs) == 1
    rec, res = recs[0], h.engine.results[0]
    assert np.array_equal(rec.output_ids, res.output_ids)  # type: ignore[attr-defined]
    assert np.array_equal(rec.output_logprobs, res.output_logprobs)  # type: ignore[attr-defined]
    assert rec.prompt_ids.tolist() == h.engine.calls[0].input_ids
    assert h.engine.streams[0].closed  # type: ignore[attr-defined]
    return rec


async def records(h: ProxyHandle, n: int) -> None:
    await async_wait_for(lambda: h.server._sessions[h.api_key].log.count >= n, 5.0, f"{n} record(s)")



async def test_openai_chat_streams_reasoning_text_then_the_tool_call(live_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = live_proxy
    slow(h, TOOL_TEXT)
    tools = [{"type": "function", "function": {"name": "bash", "parameters": SCHEMA}}]
    client = sdk.openai(h.base_url, h.api_key)
    stream = await client.chat.completions.create(model="m", messages=MSGS, tools=tools, stream=True)  # type: ignore[arg-type]
    reasoning, text, calls, finish = [], [], [], []
    async for c in stream:
        for ch in c.choices:
            d = ch.delta
            if getattr(d, "reasoning_content", None):
                reasoning.append(d.reasoning_content)  # type: ignore[attr-defined]
                # the engine is still sampling when the first pieces arrive
                assert h.engine.streams[0].result is None  # type: ignore[attr-defined]
            if d.content:
                text.append(d.content)
            calls += d.tool_calls or []
            if ch.finish_reason:
                finish.append(ch.finish_reason)
    assert len(reasoning) > 3 and "".join(reasoning) == "I should list the files first."
    assert len(text) > 1 and "".join(text) == "Let me look at them."
    assert len(calls) == 1 and calls[0].function.name == "bash"
    assert json.loads(calls[0].function.arguments) == {"command": "ls -la"}
    assert finish == ["tool_calls"]
    rec = the_record(h)
    assert rec.response.tool_calls[0].name == "bash" and rec.finish_reason == "stop"


async def test_openai_responses_stream(live_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = live_proxy
    slow(h, TOOL_TEXT)
    tools = [{"type": "function", "name": "bash", "parameters": SCHEMA}]
    client = sdk.openai(h.base_url, h.api_key)
    async with client.responses.stream(model="m", input="list files", tools=tools) as s:  # type: ignore[arg-type]
        kinds = [e.type async for e in s]
        final = await s.get_final_response()
    assert kinds.count("response.reasoning_summary_text.delta") > 3
    assert kinds.count("response.output_text.delta") > 1
    assert kinds.index("response.reasoning_summary_text.delta") < kinds.index("response.output_text.delta")
    assert kinds[-1] == "response.completed"
    assert [o.type for o in final.output] == ["reasoning", "message", "function_call"]
    assert final.output_text == "Let me look at them."
    call = final.output[2]
    assert call.name == "bash" and json.loads(call.arguments) == {"command": "ls -la"}  # type: ignore[union-attr]
    the_record(h)


async def test_anthropic_stream(live_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = live_proxy
    slow(h, TOOL_TEXT)
    client = sdk.anthropic(h.base_url, h.api_key)
    tools = [{"name": "bash", "description": "Run", "input_schema": SCHEMA}]
    async with client.messages.stream(model="claude-x", max_tokens=200, messages=MSGS, tools=tools,  # type: ignore[arg-type]
                                      thinking={"type": "enabled", "budget_tokens": 100}) as s:
        kinds = [e.type async for e in s]
        msg = await s.get_final_message()
    assert [b.type for b in msg.content] == ["thinking", "text", "tool_use"]
    assert msg.content[0].thinking == "I should list the files first."  # type: ignore[union-attr]
    assert msg.content[1].text == "Let me look at them."  # type: ignore[union-attr]
    assert msg.content[2].input == {"command": "ls -la"}  # type: ignore[union-attr]
    assert msg.stop_reason == "tool_use"
    assert kinds.count("thinking") > 3 and kinds.count("text") > 1
    rec = the_record(h)
    assert msg.usage.output_tokens == len(rec.output_ids)


async def test_google_stream(live_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = live_proxy
    slow(h, TOOL_TEXT)
    client = sdk.google(h.base_url, h.api_key)
    cfg = gtypes.GenerateContentConfig(
        tools=[gtypes.Tool(function_declarations=[gtypes.FunctionDeclaration(name="bash",
                                                                             parameters_json_schema=SCHEMA)])],
        thinking_config=gtypes.ThinkingConfig(include_thoughts=True))
    stream = await client.aio.models.generate_content_stream(model="g", contents="list files", config=cfg)
    chunks = [c async for c in stream]
    parts = [p for c in chunks for p in (c.candidates[0].content.parts or [])]  # type: ignore[index, union-attr]
    thoughts = [p.text for p in parts if p.thought]
    texts = [p.text for p in parts if p.text and not p.thought]
    calls = [p.function_call for p in parts if p.function_call]
    assert len(thoughts) > 3 and "".join(thoughts) == "I should list the files first."  # type: ignore[arg-type]
    assert "".join(texts) == "Let me look at them."  # type: ignore[arg-type]
    assert len(calls) == 1 and calls[0].name == "bash" and calls[0].args == {"command": "ls -la"}
    assert chunks[-1].candidates[0].finish_reason == gtypes.FinishReason.STOP  # type: ignore[index]
    the_record(h)


RAW = [("openai_chat", "/v1/chat/completions", {"model": "m", "messages": MSGS, "stream": True}),
       ("openai_responses", "/v1/responses", {"model": "m", "input": "hi", "stream": True}),
       ("anthropic", "/v1/messages", {"model": "c", "max_tokens": 50, "messages": MSGS, "stream": True}),
       ("google", "/v1beta/models/g:streamGenerateContent?alt=sse",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})]
KEEPALIVE = {"openai_chat": b'"delta":{}', "openai_responses": b"event: response.in_progress",
             "anthropic": b"event: ping", "google": b"\n"}


async def _raw(h: ProxyHandle, path: str, body: dict, stop_after: bytes | None = None) -> bytes:  # type: ignore[type-arg]
    headers = {"Authorization": f"Bearer {h.api_key}", "x-api-key": h.api_key, "x-goog-api-key": h.api_key}
    out = b""
    async with aiohttp.ClientSession() as http, http.post(h.base_url + path, json=body, headers=headers) as resp:
        assert resp.status == 200 and resp.headers["Content-Type"] == "text/event-stream"
        async for piece in resp.content.iter_any():
            out += piece
            if stop_after is not None and stop_after in out:
                break
    return out


@pytest.mark.parametrize("provider,path,body", RAW, ids=[r[0] for r in RAW])
async def test_keepalives_before_the_first_token_in_each_providers_form(
    live_proxy: ProxyHandle, provider: str, path: str, body: dict  # type: ignore[type-arg]
) -> None:
    h = live_proxy
    slow(h, "Hello there, friend.", first=0.7)  # keep-alive interval: 0.2 s
    raw = await _raw(h, path, body)
    first = raw.index(b"Hello")
    head = raw[:first]
    if provider == "google":
        assert head.startswith(b"\n\n") and b":" not in head.split(b"data:")[0]  # blank lines, never a comment
    else:
        assert head.count(KEEPALIVE[provider]) >= 2
        assert b"\n:" not in b"\n" + head  # no SSE comment lines
    assert b"friend" in raw and h.engine.streams[0].result is not None  # type: ignore[attr-defined]
    the_record(h)


async def test_unparsable_tool_call_is_sent_as_text(live_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = live_proxy
    slow(h, BAD_TOOL, first=0.0, per_token=0.0)
    r = await sdk.openai(h.base_url, h.api_key).chat.completions.create(model="m", messages=MSGS, stream=True)  # type: ignore[arg-type]
    text = "".join([ch.delta.content or "" async for c in r for ch in c.choices])
    rec = the_record(h)
    assert rec.parse_error and text == rec.response.content == BAD_TOOL


async def test_live_and_synthesized_streams_record_the_same(live_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = live_proxy
    slow(h, TOOL_TEXT, first=0.0, per_token=0.0)
    h.engine.script = [TOOL_TEXT, TOOL_TEXT]
    tools = [{"type": "function", "function": {"name": "bash", "parameters": SCHEMA}}]
    contents = []
    for live in (True, False):
        h.server.stream_upstream = live  # type: ignore[attr-defined]
        client = sdk.openai(h.base_url, h.api_key)
        r = await client.chat.completions.create(model="m", messages=MSGS, tools=tools, stream=True)  # type: ignore[arg-type]
        contents.append("".join([ch.delta.content or "" async for c in r for ch in c.choices]))
    a, b = h.server.close_session(h.api_key)  # type: ignore[attr-defined]
    assert contents[0] == contents[1] == "Let me look at them."
    assert a.prompt_ids.tolist() == b.prompt_ids.tolist()
    assert np.array_equal(a.output_ids, b.output_ids) and np.array_equal(a.output_logprobs, b.output_logprobs)
    assert (a.finish_reason, a.response.content, a.response.reasoning_content) == (
        b.finish_reason, b.response.content, b.response.reasoning_content)
    assert ([(c.name, c.arguments) for c in a.response.tool_calls]
            == [(c.name, c.arguments) for c in b.response.tool_calls])


async def test_client_gone_aborts_the_engine_request_and_records_abort(live_proxy: ProxyHandle) -> None:
    h = live_proxy
    slow(h, "word " * 200, first=0.0, per_token=0.02)
    await _raw(h, RAW[0][1], RAW[0][2], stop_after=b"word")  # reads the first delta, then hangs up
    stream = h.engine.streams[0]  # type: ignore[attr-defined]
    # the abort lands within a second (the failed write of the next batch)
    await async_wait_for(lambda: bool(stream.aborted), 2.0, "the engine request aborted")
    assert stream.aborted and stream.sent < 150
    await records(h, 1)
    recs = h.server.close_session(h.api_key)  # type: ignore[attr-defined]
    assert len(recs) == 1 and recs[0].finish_reason == "abort"
    assert len(recs[0].output_ids) == len(recs[0].output_logprobs) == stream.sent


async def test_client_gone_while_the_engine_is_silent_aborts_within_a_second(live_proxy: ProxyHandle) -> None:
    h = live_proxy
    h.server.sse_keepalive_s = 30.0  # type: ignore[attr-defined]  # no keep-alive write finds the client gone
    slow(h, "word " * 20, first=10.0)  # a long prefill: nothing is written while the client leaves
    headers = {"Authorization": f"Bearer {h.api_key}"}
    async with aiohttp.ClientSession() as http, http.post(h.base_url + "/v1/chat/completions", headers=headers,
                                                          json={"model": "m", "messages": MSGS, "stream": True}):
        pass  # the response head came: the client hangs up before any token
    left = asyncio.get_running_loop().time()
    await async_wait_for(lambda: bool(h.engine.streams and h.engine.streams[0].aborted),  # type: ignore[attr-defined]
                         3.0, "the engine request aborted")
    assert h.engine.streams[0].aborted, "the engine request was not aborted"  # type: ignore[attr-defined]
    assert asyncio.get_running_loop().time() - left < 1.0
    await records(h, 1)
    recs = h.server.close_session(h.api_key)  # type: ignore[attr-defined]
    assert len(recs) == 1 and recs[0].finish_reason == "abort" and len(recs[0].output_ids) == 0


async def test_a_retried_turn_leaves_one_trainable_copy(live_proxy: ProxyHandle) -> None:
    from polar_hpc.config.run import BuilderSpec
    from polar_hpc.trajectory.registry import get_builder

    h = live_proxy
    slow(h, "word " * 200, first=0.0, per_token=0.02)
    h.engine.script = ["word " * 200, "Done."]
    await _raw(h, RAW[0][1], RAW[0][2], stop_after=b"word")  # the harness gives up on the stream ...
    await records(h, 1)
    h.engine.token_delay_s = 0.0  # type: ignore[attr-defined]
    await _raw(h, RAW[0][1], RAW[0][2])  # ... and sends the same request again
    await records(h, 2)
    recs = h.server.close_session(h.api_key)  # type: ignore[attr-defined]
    assert [r.finish_reason for r in recs] == ["abort", "stop"]
    assert recs[0].prompt_ids.tolist() == recs[1].prompt_ids.tolist()
    for name in ("per_request", "prefix_merging"):
        traj = get_builder(BuilderSpec(name=name), end_of_turn_id=h.template.end_of_turn_id).build(recs)  # type: ignore[attr-defined]
        used = [c for tr in traj.traces for c in tr.meta.completion_ids]
        assert used == [recs[1].completion_id], name
        note = traj.traces[0].meta.retried_aborts
        assert msgspec.to_builtins(note) == [{"completion_id": recs[0].completion_id, "index": 0,
                                              "sampled_tokens": len(recs[0].output_ids),
                                              "retried_by": recs[1].completion_id}]


async def test_a_held_tool_call_gets_keepalives(live_proxy: ProxyHandle) -> None:
    h = live_proxy
    slow(h, 'Ok.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>', first=0.0,
         per_token=0.05)
    raw = await _raw(h, RAW[0][1], RAW[0][2])
    events = [e for e in raw.split(b"\n\n") if e]
    text_at = max(i for i, e in enumerate(events) if b'"delta":{"content":"' in e)
    call_at = next(i for i, e in enumerate(events) if b'"tool_calls"' in e)
    assert sum(b'"delta":{}' in e for e in events[text_at:call_at]) >= 2  # the call's ~20 tokens: 1 s, keep-alive 0.2 s
    the_record(h)


async def test_engine_failure_mid_stream_is_an_in_stream_error(live_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = live_proxy
    slow(h, "word " * 50, first=0.0, per_token=0.01)
    h.engine.fail_after = 5  # type: ignore[attr-defined]
    stream = await sdk.openai(h.base_url, h.api_key).chat.completions.create(model="m", messages=MSGS, stream=True)  # type: ignore[arg-type]
    got = []
    with pytest.raises(openai.APIError, match="broke after 5 tokens"):
        async for c in stream:
            got += [ch.delta.content for ch in c.choices if ch.delta.content]
    assert "".join(got).startswith("word")
    recs = h.server.close_session(h.api_key)  # type: ignore[attr-defined]
    assert len(recs) == 1 and recs[0].finish_reason == "error" and "broke after 5" in (recs[0].parse_error or "")
    assert recs[0].prompt_ids.tolist() == h.engine.calls[0].input_ids


def test_an_https_engine_falls_back_to_synthesized_streams(qwen3_template, polar_log: list[str]) -> None:  # type: ignore[no-untyped-def]
    from polar_hpc.engine.engine import SGLangEngine
    from polar_hpc.proxy.server import ProxyServer
    from polar_hpc.proxy.settings import ProxySettings

    server = ProxyServer(qwen3_template, SGLangEngine(["https://127.0.0.1:9"]), ProxySettings(model_name="m"))
    plain = ProxyServer(qwen3_template, SGLangEngine(["http://127.0.0.1:9"]), ProxySettings(model_name="m"))
    assert not server.stream_upstream and plain.stream_upstream
    assert any("stream_upstream is on, but engine URLs ['https://127.0.0.1:9'] are not plain http://" in m
               for m in polar_log), polar_log
