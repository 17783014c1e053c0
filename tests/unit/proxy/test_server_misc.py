"""count_tokens, models, health, side requests, continuation prompts and streaming keep-alive through the proxy."""

from __future__ import annotations

import asyncio

import aiohttp

from polar_hpc.providers.side import is_side_request
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, SamplingParams, ToolSpec
from tests.fixtures.proxy import ProxyHandle
from tests.fixtures.sdk_clients import SdkClients


async def test_count_tokens_models_health(scripted_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = scripted_proxy
    a = sdk.anthropic(h.base_url, h.api_key)
    n = await a.messages.count_tokens(model="c", messages=[{"role": "user", "content": "hello there"}])
    expect = len(h.template.render_ids([{"role": "user", "content": "hello there"}]))  # type: ignore[attr-defined]
    assert n.input_tokens == expect
    g = sdk.google(h.base_url, h.api_key)
    assert (await g.aio.models.count_tokens(model="g", contents="hello there")).total_tokens == expect
    models = await sdk.openai(h.base_url, h.api_key).models.list()
    assert [m.id for m in models.data] == ["policy"]
    async with aiohttp.ClientSession() as s:
        async with s.head(h.base_url + "/") as r:
            assert r.status == 200
        async with s.get(h.base_url + "/health") as r:
            assert r.status == 200
    assert h.engine.calls == [] and h.server.close_session(h.api_key) == []  # type: ignore[attr-defined]


def test_side_request_classifier() -> None:
    def req(system: str, tools: bool = False, max_new: int | None = None) -> CanonicalRequest:
        return CanonicalRequest(messages=[ChatMessage(role="system", content=system),
                                          ChatMessage(role="user", content="x")],
                                tools=[ToolSpec(name="t")] if tools else [],
                                sampling=SamplingParams(max_new_tokens=max_new))

    assert is_side_request(req("You are a title generator. You output ONLY a thread title."))
    assert is_side_request(req("anything", max_new=1))
    assert not is_side_request(req("You are a title generator.", tools=True))
    assert not is_side_request(req("You are a coding agent."))


async def test_continuation_prompts_reuse_sampled_ids(scripted_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = scripted_proxy
    h.server.render_mode = "continuation"  # type: ignore[attr-defined]
    key = h.server.open_session("cont/0#0")  # type: ignore[attr-defined]
    client = sdk.openai(h.base_url, key)
    msgs: list[dict[str, str]] = [{"role": "user", "content": "one"}]
    for turn in range(3):
        r = await client.chat.completions.create(model="m", messages=msgs)  # type: ignore[arg-type]
        msgs += [{"role": "assistant", "content": r.choices[0].message.content or ""},
                 {"role": "user", "content": f"t{turn}"}]
    recs = h.server.close_session(key)  # type: ignore[attr-defined]
    assert [r.render_mode for r in recs] == ["canonical", "continuation", "continuation"]
    for prev, cur in zip(recs, recs[1:], strict=False):
        held = prev.prompt_ids.tolist() + prev.output_ids.tolist()
        assert cur.prompt_ids.tolist()[: len(held)] == held


async def test_slow_engine_stream_starts_with_keepalive(scripted_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = scripted_proxy
    h.server.sse_keepalive_s = 0.05  # type: ignore[attr-defined]
    real = h.engine.generate

    async def slow(*a, **kw):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0.3)
        return await real(*a, **kw)

    h.engine.generate = slow  # type: ignore[method-assign]
    a = sdk.anthropic(h.base_url, h.api_key)
    async with a.messages.stream(model="c", max_tokens=50, messages=[{"role": "user", "content": "hi"}]) as s:
        m = await s.get_final_message()
    assert m.content[0].text == "Hello from the scripted engine."  # type: ignore[union-attr]
    from polar_hpc.engine.errors import EngineUnavailable

    h.engine.script = [EngineUnavailable("gone")]
    async with aiohttp.ClientSession() as s, s.post(
        h.base_url + "/v1/messages", headers={"x-api-key": h.api_key},
        json={"model": "c", "max_tokens": 5, "stream": True, "messages": [{"role": "user", "content": "x"}]}) as r:
        body = await r.text()
    assert r.status == 200 and body.startswith(": keep-alive") and "event: error" in body and "overloaded_error" in body


async def test_slow_google_stream_keepalive_is_a_blank_line(scripted_proxy: ProxyHandle, sdk: SdkClients) -> None:
    """google-genai's JS parser (Gemini CLI) reads only ``data:`` frames at its buffer's head, leading whitespace
    allowed: a comment keep-alive there made every slow call fail and be retried. The keep-alive is a blank line."""

    h = scripted_proxy
    h.server.sse_keepalive_s = 0.05  # type: ignore[attr-defined]
    real = h.engine.generate

    async def slow(*a, **kw):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0.3)
        return await real(*a, **kw)

    h.engine.generate = slow  # type: ignore[method-assign]
    path = "/v1beta/models/m:streamGenerateContent?alt=sse"
    async with (aiohttp.ClientSession() as s,
                s.post(h.base_url + path, headers={"x-goog-api-key": h.api_key},
                       json={"contents": [{"role": "user", "parts": [{"text": "x"}]}]}) as r):
        body = await r.text()
    assert r.status == 200 and body.startswith("\n") and ": keep-alive" not in body
    assert body.lstrip().startswith("data: ")
    client = sdk.google(h.base_url, h.api_key, api_version="v1beta")
    stream = await client.aio.models.generate_content_stream(model="m", contents="hi")
    text = "".join([c.text or "" async for c in stream])
    assert text == "Hello from the scripted engine."


async def test_client_gone_mid_stream_keeps_later_records(scripted_proxy: ProxyHandle, sdk: SdkClients) -> None:
    """A client that disconnects during the keep-alives: its engine call is cancelled, its index finished, and
    the session's next call is still recorded (the log releases records in index order)."""
    h = scripted_proxy
    h.server.sse_keepalive_s = 0.05  # type: ignore[attr-defined]
    real = h.engine.generate
    cancelled = asyncio.Event()

    async def slow(*a, **kw):  # type: ignore[no-untyped-def]
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return await real(*a, **kw)

    h.engine.generate = slow  # type: ignore[method-assign]
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    headers = {"Authorization": f"Bearer {h.api_key}"}
    async with aiohttp.ClientSession() as s:
        r = await s.post(h.base_url + "/v1/chat/completions", headers=headers, json=body)
        assert r.status == 200 and (await r.content.readline()).startswith(b": keep-alive")
        r.close()  # drops the connection mid-stream
    await asyncio.wait_for(cancelled.wait(), 5.0)
    h.engine.generate = real  # type: ignore[method-assign]
    client = sdk.openai(h.base_url, h.api_key)
    r2 = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "y"}])
    assert r2.choices[0].message.content == "Hello from the scripted engine."
    recs = h.server.close_session(h.api_key)  # type: ignore[attr-defined]
    assert [r.index for r in recs] == [1]


async def test_close_session_forgets_sticky_server_and_stop_removes_spill_dir(scripted_proxy: ProxyHandle) -> None:
    h = scripted_proxy
    forgotten: list[str] = []
    h.engine.forget_session = forgotten.append  # type: ignore[attr-defined]
    spill = h.server._spill_dir  # type: ignore[attr-defined]
    spill.mkdir(parents=True, exist_ok=True)
    (spill / "x.spill").write_bytes(b"")
    h.server.close_session(h.api_key)  # type: ignore[attr-defined]
    assert forgotten == ["task-1/0#0"]
    await h.server.stop()  # type: ignore[attr-defined]
    assert not spill.exists()
