"""Official SDKs against the proxy in front of a scripted engine (a stand-in at the engine boundary), so that
tool calls and reasoning, which a random tiny model never emits, go through parse and response synthesis."""

from __future__ import annotations

import json

import numpy as np
import pytest
from google.genai import types as gtypes

from polar_hpc.chat.template import to_template_messages, to_template_tools
from tests.fixtures.proxy import ProxyHandle
from tests.fixtures.sdk_clients import SdkClients

TOOL_TEXT = ('<think>\nI should list files.\n</think>\n\nLet me look.\n<tool_call>\n'
             '{"name": "bash", "arguments": {"command": "ls -la"}}\n</tool_call>')
BASH_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}


def check_record(h: ProxyHandle, n: int = 1):  # type: ignore[no-untyped-def]
    recs = h.server.close_session(h.api_key)  # type: ignore[attr-defined]
    assert len(recs) == n
    for i, rec in enumerate(recs):
        assert rec.index == i
        c = rec.canonical
        tools = to_template_tools(c.tools) if c.tools else None
        expect = h.template.render_ids(to_template_messages(c.messages), tools, **c.template_kwargs)  # type: ignore[attr-defined]
        assert rec.prompt_ids.tolist() == expect
        res = h.engine.results[i]
        assert np.array_equal(rec.output_ids, res.output_ids)  # type: ignore[attr-defined]
        assert np.array_equal(rec.output_logprobs, res.output_logprobs)  # type: ignore[attr-defined]
        assert h.engine.calls[i].input_ids == rec.prompt_ids.tolist()
        assert rec.weight_version == "7"
    return recs


@pytest.mark.parametrize("stream", [False, True])
async def test_openai_chat_tool_call(scripted_proxy: ProxyHandle, stream: bool, sdk: SdkClients) -> None:
    h = scripted_proxy
    h.engine.script = [TOOL_TEXT]
    tools = [{"type": "function", "function": {"name": "bash", "description": "Run", "parameters": BASH_SCHEMA}}]
    msgs = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "list files"}]
    client = sdk.openai(h.base_url, h.api_key)
    if stream:
        chunks = [c async for c in await client.chat.completions.create(
            model="any", messages=msgs, tools=tools, stream=True, stream_options={"include_usage": True})]  # type: ignore[arg-type]
        calls = [tc for c in chunks for ch in c.choices for tc in (ch.delta.tool_calls or [])]
        assert calls[0].function.name == "bash"
        assert json.loads(calls[0].function.arguments) == {"command": "ls -la"}
        assert [ch.finish_reason for c in chunks for ch in c.choices if ch.finish_reason] == ["tool_calls"]
        n_out = len(h.engine.results[0].output_ids)  # type: ignore[attr-defined]
        assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == n_out
        assert "".join(ch.delta.content or "" for c in chunks for ch in c.choices) == "Let me look."
    else:
        r = await client.chat.completions.create(model="any", messages=msgs, tools=tools)  # type: ignore[arg-type]
        m = r.choices[0].message
        assert r.choices[0].finish_reason == "tool_calls"
        assert m.content == "Let me look."
        assert m.tool_calls and m.tool_calls[0].function.name == "bash"  # type: ignore[union-attr]
        assert json.loads(m.tool_calls[0].function.arguments) == {"command": "ls -la"}  # type: ignore[union-attr]
        assert r.model == "any"
    recs = check_record(h)
    assert recs[0].response.reasoning_content == "I should list files."
    assert recs[0].response.tool_calls[0].name == "bash"
    assert recs[0].provider == "openai_chat"


@pytest.mark.parametrize("stream", [False, True])
async def test_openai_responses_function_call(scripted_proxy: ProxyHandle, stream: bool, sdk: SdkClients) -> None:
    h = scripted_proxy
    h.engine.script = [TOOL_TEXT]
    tools = [{"type": "function", "name": "bash", "description": "Run", "parameters": BASH_SCHEMA},
             {"type": "web_search"}]
    client = sdk.openai(h.base_url, h.api_key)
    kw = dict(model="gpt-x", instructions="Be terse.", input="list files", tools=tools,
              reasoning={"effort": "high", "summary": "auto"}, include=["reasoning.encrypted_content"])
    if stream:
        async with client.responses.stream(**kw) as s:  # type: ignore[arg-type]
            types_seen = [e.type async for e in s]
            r = await s.get_final_response()
        assert types_seen[0] == "response.created" and types_seen[-1] == "response.completed"
        assert "response.function_call_arguments.done" in types_seen
    else:
        r = await client.responses.create(**kw)  # type: ignore[arg-type]
    kinds = [o.type for o in r.output]
    assert kinds == ["reasoning", "message", "function_call"]
    fc = r.output[2]
    assert fc.name == "bash" and json.loads(fc.arguments) == {"command": "ls -la"}  # type: ignore[union-attr]
    assert r.output_text == "Let me look."
    assert r.output[0].encrypted_content.startswith("polar:")  # type: ignore[union-attr]
    recs = check_record(h)
    assert "dropped hosted tool 'web_search'" in recs[0].canonical.notes
    assert recs[0].canonical.template_kwargs == {"enable_thinking": True}


@pytest.mark.parametrize("stream", [False, True])
async def test_anthropic_tool_use_and_thinking(scripted_proxy: ProxyHandle, stream: bool, sdk: SdkClients) -> None:
    h = scripted_proxy
    h.engine.script = [TOOL_TEXT]
    client = sdk.anthropic(h.base_url, h.api_key)
    kw = dict(
        model="claude-x", max_tokens=8000,
        system=[{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "list files"}],
        tools=[{"name": "bash", "description": "Run", "input_schema": BASH_SCHEMA}],
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    if stream:
        async with client.messages.stream(**kw) as s:  # type: ignore[arg-type]
            m = await s.get_final_message()
    else:
        m = await client.messages.create(**kw)  # type: ignore[arg-type]
    assert [b.type for b in m.content] == ["thinking", "text", "tool_use"]
    assert m.content[0].thinking == "I should list files."  # type: ignore[union-attr]
    assert m.content[0].signature.startswith("sg_polar_")  # type: ignore[union-attr]
    assert m.content[1].text == "Let me look."  # type: ignore[union-attr]
    assert m.content[2].input == {"command": "ls -la"} and m.content[2].id.startswith("toolu_")  # type: ignore[union-attr]
    assert m.stop_reason == "tool_use"
    assert m.usage.output_tokens == len(h.engine.results[0].output_ids)  # type: ignore[attr-defined]
    recs = check_record(h)
    assert h.engine.calls[0].sampling.max_new_tokens == 256  # clamped to the proxy's cap
    assert recs[0].canonical.messages[0].content == "Be terse."


@pytest.mark.parametrize("stream", [False, True])
async def test_google_function_call(scripted_proxy: ProxyHandle, stream: bool, sdk: SdkClients) -> None:
    h = scripted_proxy
    h.engine.script = [TOOL_TEXT]
    client = sdk.google(h.base_url, h.api_key)
    cfg = gtypes.GenerateContentConfig(
        system_instruction="Be terse.",
        tools=[gtypes.Tool(function_declarations=[gtypes.FunctionDeclaration(
            name="bash", description="Run", parameters_json_schema=BASH_SCHEMA)])],
        thinking_config=gtypes.ThinkingConfig(include_thoughts=True),
    )
    if stream:
        parts = []
        async for chunk in await client.aio.models.generate_content_stream(model="gemini-x", contents="list files",
                                                                           config=cfg):
            parts += chunk.candidates[0].content.parts  # type: ignore[index,union-attr,operator]
            last = chunk
    else:
        last = await client.aio.models.generate_content(model="gemini-x", contents="list files", config=cfg)
        parts = last.candidates[0].content.parts  # type: ignore[index,union-attr,assignment]
    assert parts[0].thought and parts[0].text == "I should list files."
    assert parts[1].text == "Let me look."
    assert parts[2].function_call.name == "bash" and parts[2].function_call.args == {"command": "ls -la"}  # type: ignore[union-attr]
    assert parts[2].thought_signature.startswith(b"polar:")  # type: ignore[union-attr]
    assert last.function_calls and last.function_calls[0].name == "bash"
    assert last.usage_metadata.prompt_token_count > 0  # type: ignore[union-attr,operator]
    recs = check_record(h)
    assert recs[0].provider == "google" and recs[0].canonical.model == "gemini-x"


async def test_unparsed_tool_call_is_text_and_flagged(scripted_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = scripted_proxy
    bad = '<tool_call>\n{"name": "bash", "arguments": {"command": \n</tool_call>'
    h.engine.script = [bad]
    client = sdk.openai(h.base_url, h.api_key)
    r = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == bad and not r.choices[0].message.tool_calls
    assert r.choices[0].finish_reason == "stop"
    (rec,) = check_record(h)
    assert rec.parse_error and "did not parse" in rec.parse_error
