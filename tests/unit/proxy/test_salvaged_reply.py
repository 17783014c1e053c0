"""A reply the parser salvages (one good tool call beside a malformed one) reaches each provider's official SDK as
a well-formed answer (the good call as a call, the malformed block as text), the record says what was salvaged,
and the next turn — the harness sending that answer back — continues from the sampled ids, not a re-tokenized
copy of the reshaped reply. Scripted engine: a stand-in at the engine boundary (tests/fixtures/proxy.py)."""

from __future__ import annotations

import json
from typing import Any

from google.genai import types as gtypes

from tests.fixtures.proxy import ProxyHandle
from tests.fixtures.sdk_clients import SdkClients

BAD_BLOCK = '<tool_call>\n{"name": "bash", "arguments": {"command": }\n</tool_call>'
SALVAGED = ('Checking.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>\n' + BAD_BLOCK)
TEXT = "Checking.\n\n" + BAD_BLOCK
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}


def _session(h: ProxyHandle, name: str) -> str:
    h.server.render_mode = "continuation"  # type: ignore[attr-defined]
    h.engine.script = [SALVAGED, "Done."]
    return h.server.open_session(f"{name}/0#0")  # type: ignore[attr-defined,no-any-return]


def _check(h: ProxyHandle, key: str) -> None:
    first, second = h.server.close_session(key)  # type: ignore[attr-defined]
    assert first.parse_error and "1 left as text; 1 other call(s) parsed" in first.parse_error
    assert first.response.content == TEXT and [c.name for c in first.response.tool_calls] == ["bash"]
    assert second.parse_error is None and second.render_mode == "continuation"
    held = first.prompt_ids.tolist() + first.output_ids.tolist()
    assert second.prompt_ids.tolist()[: len(held)] == held


async def test_openai_chat(scripted_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = scripted_proxy
    key = _session(h, "chat")
    client = sdk.openai(h.base_url, key)
    tools = [{"type": "function", "function": {"name": "bash", "parameters": SCHEMA}}]
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "list files"}]
    r = await client.chat.completions.create(model="m", messages=msgs, tools=tools)  # type: ignore[arg-type]
    m = r.choices[0].message
    assert m.content == TEXT and r.choices[0].finish_reason == "tool_calls"
    (tc,) = m.tool_calls or []
    assert tc.function.name == "bash" and json.loads(tc.function.arguments) == {"command": "ls"}  # type: ignore[union-attr]
    msgs += [{"role": "assistant", "content": m.content, "tool_calls": [
                 {"id": tc.id, "type": "function",
                  "function": {"name": "bash", "arguments": tc.function.arguments}}]},  # type: ignore[union-attr]
             {"role": "tool", "tool_call_id": tc.id, "content": "a.py"}]
    r2 = await client.chat.completions.create(model="m", messages=msgs, tools=tools)  # type: ignore[arg-type]
    assert r2.choices[0].message.content == "Done."
    _check(h, key)


async def test_openai_responses(scripted_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = scripted_proxy
    key = _session(h, "responses")
    client = sdk.openai(h.base_url, key)
    tools = [{"type": "function", "name": "bash", "parameters": SCHEMA}]
    items: list[Any] = [{"role": "user", "content": "list files"}]
    r = await client.responses.create(model="m", input=items, tools=tools)  # type: ignore[arg-type]
    kinds = [o.type for o in r.output]
    assert kinds == ["message", "function_call"], kinds
    assert r.output_text == TEXT
    fc = r.output[1]
    assert fc.name == "bash" and json.loads(fc.arguments) == {"command": "ls"}  # type: ignore[union-attr]
    items += [o.model_dump(exclude_none=True) for o in r.output]
    items.append({"type": "function_call_output", "call_id": fc.call_id, "output": "a.py"})  # type: ignore[union-attr]
    r2 = await client.responses.create(model="m", input=items, tools=tools)  # type: ignore[arg-type]
    assert r2.output_text == "Done."
    _check(h, key)


async def test_anthropic(scripted_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = scripted_proxy
    key = _session(h, "anthropic")
    client = sdk.anthropic(h.base_url, key)
    tools = [{"name": "bash", "input_schema": SCHEMA}]
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "list files"}]
    m = await client.messages.create(model="c", max_tokens=100, messages=msgs, tools=tools)  # type: ignore[arg-type]
    assert [b.type for b in m.content] == ["text", "tool_use"] and m.stop_reason == "tool_use"
    assert m.content[0].text == TEXT  # type: ignore[union-attr]
    tu = m.content[1]
    assert tu.name == "bash" and tu.input == {"command": "ls"}  # type: ignore[union-attr]
    msgs += [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tu.id, "content": "a.py"}]}]  # type: ignore[union-attr]
    m2 = await client.messages.create(model="c", max_tokens=100, messages=msgs, tools=tools)  # type: ignore[arg-type]
    assert m2.content[0].text == "Done."  # type: ignore[union-attr]
    _check(h, key)


async def test_google(scripted_proxy: ProxyHandle, sdk: SdkClients) -> None:
    h = scripted_proxy
    key = _session(h, "google")
    client = sdk.google(h.base_url, key)
    cfg = gtypes.GenerateContentConfig(tools=[gtypes.Tool(function_declarations=[
        gtypes.FunctionDeclaration(name="bash", parameters_json_schema=SCHEMA)])])
    contents: list[Any] = [gtypes.Content(role="user", parts=[gtypes.Part(text="list files")])]
    r = await client.aio.models.generate_content(model="g", contents=contents, config=cfg)
    reply = r.candidates[0].content  # type: ignore[index]
    parts = reply.parts  # type: ignore[union-attr]
    assert parts[0].text == TEXT  # type: ignore[index]
    assert parts[1].function_call.name == "bash" and parts[1].function_call.args == {"command": "ls"}  # type: ignore[index,union-attr]
    contents += [reply, gtypes.Content(role="user", parts=[
        gtypes.Part.from_function_response(name="bash", response={"output": "a.py"})])]
    r2 = await client.aio.models.generate_content(model="g", contents=contents, config=cfg)
    assert r2.text == "Done."
    _check(h, key)
