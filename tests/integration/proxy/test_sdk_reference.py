"""Official SDKs → proxy → real reference server (tiny Qwen3 on CPU). Checks the parsed SDK objects and the
record: prompt ids equal an independent render of the canonical request, sampled ids and logprobs equal what
the server returned (tapped at the engine boundary)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from google.genai import types as gtypes

from polar_hpc.chat.template import ChatTemplate, to_template_messages, to_template_tools
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.result import GenerateResult
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.proxy.server import ProxyServer
from polar_hpc.proxy.settings import ProxySettings
from tests.fixtures.sdk_clients import SdkClients

pytestmark = pytest.mark.slow
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
MAX = 12


@dataclass
class Tap:
    """Delegates to the real engine and keeps every result it returned."""

    engine: SGLangEngine
    results: list[GenerateResult] = field(default_factory=list)

    async def generate(self, *args: Any, **kw: Any) -> GenerateResult:
        r = await self.engine.generate(*args, **kw)
        self.results.append(r)
        return r

    def forget_session(self, session_id: str) -> None:
        self.engine.forget_session(session_id)


@dataclass
class Rig:
    server: ProxyServer
    tap: Tap
    template: ChatTemplate
    base: str
    key: str


@pytest.fixture
async def rig(reference_server: Any) -> AsyncIterator[Rig]:
    template = ChatTemplate.from_model_dir(reference_server.model_dir)
    engine = SGLangEngine([reference_server.url], EngineSettings(request_timeout_s=120, context_length=4096))
    tap = Tap(engine)
    server = ProxyServer(template, tap, ProxySettings(model_name="policy", context_length=4096, max_new_tokens=MAX))
    base = await server.start()
    try:
        yield Rig(server, tap, template, base, server.open_session("ref/0#0"))
    finally:
        await server.stop()
        await engine.close()


def check(rig: Rig, n: int, content: list[str]) -> None:
    recs = rig.server.close_session(rig.key)
    assert len(recs) == n == len(rig.tap.results)
    for rec, res, text in zip(recs, rig.tap.results, content, strict=True):
        c = rec.canonical
        expect = rig.template.render_ids(to_template_messages(c.messages),
                                         to_template_tools(c.tools) if c.tools else None,
                                         **c.template_kwargs)
        assert rec.prompt_ids.tolist() == expect
        assert np.array_equal(rec.output_ids, res.output_ids) and len(rec.output_ids) <= MAX
        assert np.array_equal(rec.output_logprobs, res.output_logprobs)
        assert rec.finish_reason == res.finish_reason
        if not rec.response.tool_calls:
            assert text == rec.response.content


@pytest.mark.parametrize("stream", [False, True])
async def test_openai_chat(rig: Rig, stream: bool, sdk: SdkClients) -> None:
    client = sdk.openai(rig.base, rig.key)
    tools = [{"type": "function", "function": {"name": "bash", "parameters": SCHEMA}}]
    kw: dict[str, Any] = dict(model="x", messages=[{"role": "user", "content": "hi"}], tools=tools, max_tokens=50)
    if stream:
        chunks = [c async for c in await client.chat.completions.create(
            **kw, stream=True, stream_options={"include_usage": True})]
        text = "".join(ch.delta.content or "" for c in chunks for ch in c.choices)
        assert chunks[-1].usage and chunks[-1].usage.completion_tokens == len(rig.tap.results[0].output_ids)
    else:
        r = await client.chat.completions.create(**kw)
        text = r.choices[0].message.content or ""
        assert r.usage and r.usage.prompt_tokens == rig.tap.results[0].prompt_tokens
    check(rig, 1, [text])


@pytest.mark.parametrize("stream", [False, True])
async def test_openai_responses(rig: Rig, stream: bool, sdk: SdkClients) -> None:
    client = sdk.openai(rig.base, rig.key)
    kw: dict[str, Any] = dict(model="x", instructions="Be brief.", input="hi")
    if stream:
        async with client.responses.stream(**kw) as s:
            r = await s.get_final_response()
    else:
        r = await client.responses.create(**kw)
    assert r.status in ("completed", "incomplete")
    check(rig, 1, [r.output_text])


@pytest.mark.parametrize("stream", [False, True])
async def test_anthropic(rig: Rig, stream: bool, sdk: SdkClients) -> None:
    client = sdk.anthropic(rig.base, rig.key)
    kw: dict[str, Any] = dict(model="c", max_tokens=100, messages=[{"role": "user", "content": "hi"}],
                              tools=[{"name": "bash", "input_schema": SCHEMA}],
                              thinking={"type": "enabled", "budget_tokens": 64})
    if stream:
        async with client.messages.stream(**kw) as s:
            m = await s.get_final_message()
    else:
        m = await client.messages.create(**kw)
    assert m.stop_reason in ("end_turn", "max_tokens", "tool_use")
    text = "".join(b.text for b in m.content if b.type == "text")
    check(rig, 1, [text])


@pytest.mark.parametrize("stream", [False, True])
async def test_google(rig: Rig, stream: bool, sdk: SdkClients) -> None:
    client = sdk.google(rig.base, rig.key)
    cfg = gtypes.GenerateContentConfig(max_output_tokens=100, tools=[gtypes.Tool(function_declarations=[
        gtypes.FunctionDeclaration(name="bash", parameters_json_schema=SCHEMA)])])
    if stream:
        text = ""
        async for chunk in await client.aio.models.generate_content_stream(model="g", contents="hi", config=cfg):
            text += "".join(p.text or "" for p in chunk.candidates[0].content.parts if not p.thought)  # type: ignore[index,union-attr]
    else:
        r = await client.aio.models.generate_content(model="g", contents="hi", config=cfg)
        text = "".join(p.text or "" for p in r.candidates[0].content.parts if not p.thought)  # type: ignore[index,union-attr]
    check(rig, 1, [text])


async def test_multi_turn_session_in_order(rig: Rig, sdk: SdkClients) -> None:
    client = sdk.openai(rig.base, rig.key)
    msgs: list[Any] = [{"role": "user", "content": "one"}]
    texts = []
    for turn in range(3):
        r = await client.chat.completions.create(model="x", messages=msgs)
        texts.append(r.choices[0].message.content or "")
        msgs += [{"role": "assistant", "content": texts[-1]}, {"role": "user", "content": f"turn {turn}"}]
    check(rig, 3, texts)
