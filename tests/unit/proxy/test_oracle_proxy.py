"""Oracle sessions through the proxy with the official SDKs, streaming and not, in front of a streaming-capable
stand-in engine (FAKE at the engine boundary: ScriptedStreamEngine plus deterministic teacher-forcing logprobs).
The forced reply reaches the client as the harness's own tool call; the record says ``policy = "oracle"``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest

from polar_hpc.engine.forcing import ForcedResult
from polar_hpc.policy.script import OracleScript
from polar_hpc.proxy.server import ProxyServer
from polar_hpc.proxy.settings import ProxySettings
from tests.fixtures.proxy import ScriptedStreamEngine
from tests.fixtures.sdk_clients import SdkClients

BASH = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
PATCH = "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-a - b\n+a + b\n"


class ForcingEngine(ScriptedStreamEngine):
    forced: list[list[int]]

    async def teacher_force(self, input_ids, forced_ids, *, session_id=None, deadline=None):  # type: ignore[no-untyped-def]
        self.forced = [*getattr(self, "forced", []), list(forced_ids)]
        lps = -np.arange(1, len(forced_ids) + 1, dtype=np.float32) / 50.0
        return ForcedResult(logprobs=lps, prompt_tokens=len(input_ids) + len(forced_ids), server="fake://engine")


@pytest.fixture
async def oracle_proxy(qwen3_template: Any) -> AsyncIterator[tuple[ProxyServer, ForcingEngine, str, str]]:
    engine = ForcingEngine(qwen3_template)
    server = ProxyServer(qwen3_template, engine, ProxySettings(model_name="policy", context_length=8192,
                                                               max_new_tokens=64, render_mode="continuation"))
    assert server.stream_upstream
    base = await server.start()
    key = server.open_session("calc/0#0", oracle=OracleScript(solution_patch=PATCH, verify="pytest -q"))
    try:
        yield server, engine, base, key
    finally:
        await server.stop()


@pytest.mark.parametrize("stream", [False, True])
async def test_openai_chat_gets_the_oracles_parallel_look(oracle_proxy: Any, stream: bool, sdk: SdkClients) -> None:
    server, engine, base, key = oracle_proxy
    client = sdk.openai(base, key)
    tools: Any = [{"type": "function", "function": {"name": "bash", "parameters": BASH}}]
    msgs: Any = [{"role": "user", "content": "fix calc"}]
    if stream:
        calls: dict[int, dict[str, str]] = {}
        async for chunk in await client.chat.completions.create(model="policy", messages=msgs, tools=tools,
                                                                stream=True):
            for d in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
                c = calls.setdefault(d.index, {"name": "", "arguments": ""})
                c["name"] += d.function.name or "" if d.function else ""
                c["arguments"] += d.function.arguments or "" if d.function else ""
        got = [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())]
    else:
        reply = await client.chat.completions.create(model="policy", messages=msgs, tools=tools)
        got = [(c.function.name, json.loads(c.function.arguments)) for c in reply.choices[0].message.tool_calls or []]  # type: ignore[union-attr]
    assert got == [("bash", {"command": "git status --short"}), ("bash", {"command": "cat calc.py"})]
    (rec,) = server.close_session(key)
    assert rec.policy == "oracle" and rec.output_ids.tolist() == engine.forced[0] and not engine.calls
    np.testing.assert_allclose(rec.output_logprobs, -np.arange(1, len(rec.output_ids) + 1) / 50.0)


async def test_anthropic_stream_and_a_sampled_side_request(oracle_proxy: Any, sdk: SdkClients) -> None:
    server, engine, base, key = oracle_proxy
    client = sdk.anthropic(base, key)
    tools: Any = [{"name": "Bash", "input_schema": BASH}]
    async with client.messages.stream(model="c", max_tokens=100, tools=tools,
                                      messages=[{"role": "user", "content": "fix calc"}]) as s:
        msg = await s.get_final_message()
    uses = [b for b in msg.content if b.type == "tool_use"]
    assert [u.input for u in uses] == [{"command": "git status --short"}, {"command": "cat calc.py"}]  # type: ignore[union-attr]
    title = await client.messages.create(model="c", max_tokens=20, messages=[
        {"role": "user", "content": "Generate a title for this conversation: fix calc"}])
    assert title.content[0].text == "Hello from the scripted engine."  # type: ignore[union-attr]
    recs = server.close_session(key)
    assert [r.policy for r in recs] == ["oracle", "sample"] and recs[1].side_request


async def test_the_missed_fix_of_a_recovery_demonstration_is_recorded_untrained(qwen3_template: Any,
                                                                                sdk: SdkClients) -> None:
    engine = ForcingEngine(qwen3_template)
    server = ProxyServer(qwen3_template, engine, ProxySettings(model_name="policy", context_length=8192,
                                                               max_new_tokens=64, render_mode="continuation"))
    base = await server.start()
    script = OracleScript(solution_commands=["perl fix calc.py"], first_try=["perl miss calc.py"],
                          look=["grep calc.py"], verify="pytest -q")
    key = server.open_session("calc/0#0", oracle=script)
    try:
        client = sdk.openai(base, key)
        tools: Any = [{"type": "function", "function": {"name": "bash", "parameters": BASH}}]
        msgs: Any = [{"role": "user", "content": "fix calc"}]
        commands = []
        for _ in range(3):
            reply = await client.chat.completions.create(model="policy", messages=msgs, tools=tools)
            (call,) = reply.choices[0].message.tool_calls or []
            commands.append(json.loads(call.function.arguments)["command"])  # type: ignore[union-attr]
            msgs += [reply.choices[0].message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "ok"}]
        recs = server.close_session(key)
    finally:
        await server.stop()
    assert commands == ["grep calc.py", "perl miss calc.py", "pytest -q"]
    assert [(r.policy, r.trained) for r in recs] == [("oracle", True), ("oracle", False), ("oracle", True)]
