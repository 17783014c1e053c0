"""The live streaming path against the real reference server (tiny Qwen3 on CPU), through the official SDKs:
for the same seed, a streamed call records what a non-streaming call records (the same prompt ids, sampled ids,
finish reason and text; logprobs within float noise, tests/fixtures/floats.py: the two paths run the model in
different batch shapes), and the streamed text is the recorded reply."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest
from google.genai import types as gtypes

from polar_hpc.chat.template import ChatTemplate
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.proxy.server import ProxyServer
from polar_hpc.proxy.settings import ProxySettings
from polar_hpc.wire.calls import CompletionRecord
from tests.fixtures.floats import assert_logprobs_close
from tests.fixtures.sdk_clients import SdkClients

pytestmark = pytest.mark.slow
MSGS = [{"role": "user", "content": "Say hello"}]


@pytest.fixture
async def proxy(reference_server: Any) -> AsyncIterator[tuple[ProxyServer, str, str]]:
    template = ChatTemplate.from_model_dir(reference_server.model_dir)
    engine = SGLangEngine([reference_server.url], EngineSettings(request_timeout_s=120, context_length=4096))
    server = ProxyServer(template, engine, ProxySettings(model_name="policy", context_length=4096, max_new_tokens=16))
    assert server.stream_upstream
    base = await server.start()
    try:
        yield server, base, server.open_session("ref/0#0")
    finally:
        await server.stop()
        await engine.close()


def same(a: CompletionRecord, b: CompletionRecord) -> None:
    assert a.prompt_ids.tolist() == b.prompt_ids.tolist()
    assert np.array_equal(a.output_ids, b.output_ids) and len(a.output_ids) > 0
    assert_logprobs_close(a.output_logprobs, b.output_logprobs)
    assert (a.finish_reason, a.response.content) == (b.finish_reason, b.response.content)


async def test_openai_chat_same_seed_same_record(proxy: tuple[ProxyServer, str, str], sdk: SdkClients) -> None:
    server, base, key = proxy
    client = sdk.openai(base, key)
    plain = await client.chat.completions.create(model="policy", messages=MSGS, seed=7, temperature=1.0)  # type: ignore[arg-type]
    stream = await client.chat.completions.create(model="policy", messages=MSGS, seed=7, temperature=1.0, stream=True)  # type: ignore[arg-type]
    pieces = [ch.delta.content or "" async for c in stream for ch in c.choices]
    a, b = server.close_session(key)
    same(a, b)
    assert not a.canonical.stream and b.canonical.stream
    assert "".join(pieces) == plain.choices[0].message.content == b.response.content
    assert len([p for p in pieces if p]) > 1


async def test_anthropic_and_google_greedy_same_record(proxy: tuple[ProxyServer, str, str], sdk: SdkClients) -> None:
    server, base, key = proxy
    ac = sdk.anthropic(base, key)
    plain = await ac.messages.create(model="policy", max_tokens=16, messages=MSGS, extra_body={"temperature": 0.0})  # type: ignore[arg-type]
    async with ac.messages.stream(model="policy", max_tokens=16, messages=MSGS, extra_body={"temperature": 0.0}) as s:  # type: ignore[arg-type]
        streamed = await s.get_final_message()
    assert streamed.content[0].text == plain.content[0].text  # type: ignore[union-attr]
    gc = sdk.google(base, key)
    cfg = gtypes.GenerateContentConfig(temperature=0.0, max_output_tokens=16)
    g_plain = await gc.aio.models.generate_content(model="policy", contents="Say hello", config=cfg)
    stream = await gc.aio.models.generate_content_stream(model="policy", contents="Say hello", config=cfg)
    chunks = [c.text or "" async for c in stream]
    assert "".join(chunks) == g_plain.text
    a1, a2, g1, g2 = server.close_session(key)
    same(a1, a2)
    same(g1, g2)
