"""Table-driven conversion of each provider's tricky shapes (fixtures.md §3.3) to the canonical request."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from polar_hpc.providers import provider_api
from polar_hpc.providers.detect import Route, body_provider, header_provider, request_key, route_by_path
from polar_hpc.providers.errors import ProxyError
from polar_hpc.providers.request import Normalized
from polar_hpc.wire.calls import ChatMessage, ToolCall


def normalize(route: Route, body: dict[str, Any]) -> Normalized:
    return provider_api(route.provider).normalize(route, body)

A = Route("anthropic", "generate")
C = Route("openai_chat", "generate")
R = Route("openai_responses", "generate")
G = Route("google", "generate", stream_path=True, path_model="gem")

SHELL = {"type": "object", "properties": {"cmd": {"type": "string"}}}

CASES: list[tuple[str, Route, dict[str, Any], list[ChatMessage], dict[str, Any]]] = [
    (
        "anthropic system inside messages, billing header, cache_control",
        A,
        {"model": "c", "max_tokens": 10,
         "system": [{"type": "text", "text": "x-anthropic-billing-header: cc=123;\nYou are Claude Code."},
                    {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
         "messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": "mid-conversation note"}],
         "metadata": {"user_id": "{\"session_id\": \"s\"}"}, "context_management": {"edits": []},
         "output_config": {"effort": "high"}, "thinking": {"type": "adaptive"}},
        [ChatMessage(role="system", content="You are Claude Code.\nBe brief."),
         ChatMessage(role="user", content="hi"), ChatMessage(role="system", content="mid-conversation note")],
        {"template_kwargs": {"enable_thinking": True}, "stream": False},
    ),
    (
        "anthropic tool_use / tool_result with is_error and trailing text, thinking replay",
        A,
        {"model": "c", "max_tokens": 10, "tools": [{"name": "Bash", "input_schema": SHELL},
                                                    {"type": "web_search_20250305", "name": "web_search"}],
         "tool_choice": {"type": "any"},
         "messages": [
             {"role": "user", "content": "run"},
             {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "sg"},
                                               {"type": "text", "text": "ok"},
                                               {"type": "tool_use", "id": "t1", "name": "Bash",
                                                "input": {"cmd": "ls"}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                                           "content": [{"type": "text", "text": "boom"}],
                                           "cache_control": {"type": "ephemeral"}},
                                          {"type": "text", "text": "and?"}]}]},
        [ChatMessage(role="user", content="run"),
         ChatMessage(role="assistant", content="ok", reasoning_content="hm",
                     tool_calls=[ToolCall(id="t1", name="Bash", arguments='{"cmd":"ls"}')]),
         ChatMessage(role="tool", content="[Tool Error] boom", tool_call_id="t1"),
         ChatMessage(role="user", content="and?")],
        {"tool_choice": "required", "notes": ["dropped server tool 'web_search_20250305'"]},
    ),
    (
        "anthropic compaction turn: tools=[] so no tool_choice; thinking budget above max_tokens",
        A,
        {"model": "c", "max_tokens": 8000, "tools": [], "tool_choice": {"type": "auto"},
         "thinking": {"type": "enabled", "budget_tokens": 32000}, "messages": [{"role": "user", "content": "sum up"}]},
        [ChatMessage(role="user", content="sum up")],
        {"tool_choice": None, "template_kwargs": {"enable_thinking": True}},
    ),
    (
        "chat developer role, text parts, max_completion_tokens, tool_choice only with tools",
        C,
        {"model": "m", "max_completion_tokens": 7, "tool_choice": "auto", "store": False,
         "stream_options": {"include_usage": True},
         "messages": [{"role": "developer", "content": "dev"}, {"role": "system", "content": "sys"},
                      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                      {"role": "assistant", "content": None, "reasoning_content": "r",
                       "tool_calls": [{"id": "c1", "type": "function",
                                       "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
                      {"role": "tool", "tool_call_id": "c1", "content": "1"}]},
        [ChatMessage(role="system", content="dev\n\nsys"), ChatMessage(role="user", content="a\nb"),
         ChatMessage(role="assistant", content="", reasoning_content="r",
                     tool_calls=[ToolCall(id="c1", name="f", arguments='{"x": 1}')]),
         ChatMessage(role="tool", content="1", tool_call_id="c1")],
        {"tool_choice": None},
    ),
    (
        "responses: developer items, namespace + web_search tools, reasoning attaches to next call, shell",
        R,
        {"model": "codex", "instructions": "base", "tool_choice": "auto", "parallel_tool_calls": True,
         "reasoning": {"summary": "auto"}, "include": ["reasoning.encrypted_content"], "store": False,
         "prompt_cache_key": "k", "client_metadata": {"x": "y"},
         "tools": [{"type": "function", "name": "exec_command", "parameters": SHELL},
                   {"type": "namespace", "name": "multi_agent_v1",
                    "tools": [{"type": "function", "name": "spawn", "parameters": {}}]},
                   {"type": "web_search"}],
         "input": [
             {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "skills"}]},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<env/>"}]},
             {"role": "user", "content": "go"},
             {"type": "reasoning", "id": "rs1", "summary": [],
              "encrypted_content": "polar:" + base64.b64encode(b"think first").decode()},
             {"type": "function_call", "name": "exec_command", "arguments": "{\"cmd\": \"echo hi\"}", "call_id": "k1"},
             {"type": "function_call_output", "call_id": "k1", "output": "hi\n"},
             {"type": "local_shell_call", "call_id": "k2", "action": {"type": "exec", "command": ["ls"]}},
             {"type": "local_shell_call_output", "call_id": "k2", "output": "a.txt"}]},
        [ChatMessage(role="system", content="base\n\nskills"), ChatMessage(role="user", content="<env/>"),
         ChatMessage(role="user", content="go"),
         ChatMessage(role="assistant", content="", reasoning_content="think first",
                     tool_calls=[ToolCall(id="k1", name="exec_command", arguments='{"cmd": "echo hi"}')]),
         ChatMessage(role="tool", content="hi\n", tool_call_id="k1"),
         ChatMessage(role="assistant", content="",
                     tool_calls=[ToolCall(id="k2", name="shell", arguments='{"command":["ls"]}')]),
         ChatMessage(role="tool", content="a.txt", tool_call_id="k2")],
        {"tool_choice": "auto",
         "notes": ["flattened namespace tool 'multi_agent_v1'", "dropped hosted tool 'web_search'"]},
    ),
    (
        "google: thoughtSignature on functionCall, functionCall.id, functionResponse, config keys",
        G,
        {"systemInstruction": {"parts": [{"text": "sys"}]},
         "generationConfig": {"temperature": 1, "topP": 0.95, "topK": 64, "maxOutputTokens": 9,
                              "thinkingConfig": {"includeThoughts": True, "thinkingLevel": "HIGH"}},
         "tools": [{"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": SHELL}]},
                   {"googleSearch": {}}],
         "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["run_shell_command"]}},
         "contents": [
             {"role": "user", "parts": [{"text": "run"}]},
             {"role": "model", "parts": [{"functionCall": {"id": "rsc_1", "name": "run_shell_command",
                                                           "args": {"cmd": "echo hi"}},
                                          "thoughtSignature": "skip_thought_signature_validator"}]},
             {"role": "user", "parts": [{"functionResponse": {"id": "rsc_1", "name": "run_shell_command",
                                                              "response": {"output": "hi"}}}]}]},
        [ChatMessage(role="system", content="sys"), ChatMessage(role="user", content="run"),
         ChatMessage(role="assistant", content="",
                     tool_calls=[ToolCall(id="rsc_1", name="run_shell_command", arguments='{"cmd":"echo hi"}')]),
         ChatMessage(role="tool", content="hi", tool_call_id="rsc_1", name="run_shell_command")],
        {"tool_choice": "function:run_shell_command", "stream": True, "model": "gem",
         "template_kwargs": {"enable_thinking": True}},
    ),
]


@pytest.mark.parametrize("name,route,body,messages,fields", CASES, ids=[c[0] for c in CASES])
def test_conversion(name: str, route: Route, body: dict[str, Any], messages: list[ChatMessage],
                    fields: dict[str, Any]) -> None:
    req = normalize(route, body).canonical
    assert req.messages == messages
    for k, v in fields.items():
        assert getattr(req, k) == v, k


def test_sampling_and_stop() -> None:
    req = normalize(A, {"model": "c", "max_tokens": 5, "temperature": 0.5, "top_p": 0.9, "top_k": 3,
                        "stop_sequences": ["END"], "messages": [{"role": "user", "content": "x"}]}).canonical
    assert (req.sampling.max_new_tokens, req.sampling.temperature, req.sampling.top_p, req.sampling.top_k,
            req.sampling.stop) == (5, 0.5, 0.9, 3, ["END"])
    req = normalize(G, {"contents": [{"parts": [{"text": "x"}]}],
                        "generationConfig": {"stopSequences": ["a", "b"], "seed": 3}}).canonical
    assert req.sampling.stop == ["a", "b"] and req.sampling.seed == 3


def test_gemini_replays_our_thought_signature() -> None:
    from polar_hpc.providers.google.normalize import thought_signature

    body = {"contents": [{"role": "user", "parts": [{"text": "q"}]},
                         {"role": "model", "parts": [{"text": "a", "thoughtSignature": thought_signature("why")}]}]}
    req = normalize(G, body).canonical
    assert req.messages[1].reasoning_content == "why" and req.messages[1].content == "a"


@pytest.mark.parametrize("route,body,where", [
    (A, {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": 3}]}]},
     "messages[0].content[0].tool_use_id"),
    (C, {"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": 1}}]},
     "tools[0].function.name"),
    (R, {"input": [{"type": "function_call", "name": "f", "arguments": 5}]}, "input[0].arguments"),
    (G, {"contents": [{"parts": [{"inlineData": {}}]}]}, "contents[0].parts[0]"),
])
def test_errors_name_the_place(route: Route, body: dict[str, Any], where: str) -> None:
    with pytest.raises(ProxyError) as e:
        normalize(route, body)
    assert e.value.status == 400 and where in e.value.message


def test_detection() -> None:
    assert route_by_path("POST", "/v1/messages", {}) == Route("anthropic", "generate")
    assert route_by_path("POST", "/v1/messages/count_tokens", {}) == Route("anthropic", "count_tokens")
    assert route_by_path("POST", "/v1/models/gemini-2:streamGenerateContent", {}) == Route(
        "google", "generate", stream_path=True, path_model="gemini-2")
    assert route_by_path("POST", "/v1beta/models/x:countTokens", {}).op == "count_tokens"  # type: ignore[union-attr]
    assert route_by_path("POST", "/v1/responses", {}).provider == "openai_responses"  # type: ignore[union-attr]
    assert route_by_path("GET", "/v1/models", {"anthropic-version": "2023-06-01"}) == Route("anthropic", "models")
    assert route_by_path("HEAD", "/", {}).op == "health"  # type: ignore[union-attr]
    assert route_by_path("POST", "/weird", {}) is None
    assert header_provider({"anthropic-version": "x"}) == "anthropic"
    assert body_provider({"contents": []}) == "google"
    assert body_provider({"input": "x", "instructions": "y"}) == "openai_responses"
    assert body_provider({"messages": []}) == "openai_chat"
    assert request_key({"authorization": "Bearer k1", "x-api-key": "k2"}, {"key": "k3"}) == ["k2", "k1", "k3"]
