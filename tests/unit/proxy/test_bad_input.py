"""Bad input always gets a provider-shaped 4xx (never a 500) and the server keeps serving."""

from __future__ import annotations

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures.proxy import ProxyHandle

PATHS = {
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "google": "/v1beta/models/m:generateContent",
}


def shape_ok(provider: str, body: dict) -> bool:  # type: ignore[type-arg]
    if provider == "anthropic":
        return body.get("type") == "error" and isinstance(body["error"]["message"], str)
    if provider == "google":
        return isinstance(body["error"]["code"], int) and isinstance(body["error"]["status"], str)
    return isinstance(body["error"]["message"], str) and "type" in body["error"]


async def post(h: ProxyHandle, provider: str, data: bytes, key: str | None = "ok") -> tuple[int, dict]:  # type: ignore[type-arg]
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization" if provider != "anthropic" else "x-api-key"] = (
            f"Bearer {h.api_key if key == 'ok' else key}" if provider != "anthropic"
            else (h.api_key if key == "ok" else key)
        )
    async with aiohttp.ClientSession() as s, s.post(h.base_url + PATHS[provider], data=data, headers=headers) as r:
        return r.status, await r.json(content_type=None)


async def still_serving(h: ProxyHandle) -> None:
    status, body = await post(h, "openai_chat", b'{"model":"m","messages":[{"role":"user","content":"hi"}]}')
    assert status == 200, body


CASES = [
    ("malformed json", b'{"messages": [', 400),
    ("not an object", b"[1, 2]", 400),
    ("empty", b"", 400),
    ("messages wrong type", b'{"model": "m", "messages": "hi"}', 400),
    ("role wrong", b'{"model": "m", "messages": [{"role": 5, "content": "x"}]}', 400),
    ("temperature wrong type",
     b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"}', 400),
    ("max tokens negative", b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": -3}', 400),
]


@pytest.mark.parametrize("name,data,status", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("provider", ["openai_chat", "anthropic"])
async def test_bad_bodies(scripted_proxy: ProxyHandle, provider: str, name: str, data: bytes, status: int) -> None:
    got, body = await post(scripted_proxy, provider, data)
    assert got == status, body
    assert shape_ok(provider, body), body
    await still_serving(scripted_proxy)


@pytest.mark.parametrize("provider", list(PATHS))
async def test_missing_and_unknown_key(scripted_proxy: ProxyHandle, provider: str) -> None:
    ok = b'{"model":"m","messages":[{"role":"user","content":"x"}],"input":"x","contents":[{"parts":[{"text":"x"}]}]}'
    for key in (None, "sk-polar-guess"):
        got, body = await post(scripted_proxy, provider, ok, key=key)
        assert got == 401 and shape_ok(provider, body), body
    assert scripted_proxy.engine.calls == []
    assert scripted_proxy.server.close_session(scripted_proxy.api_key) == []  # type: ignore[attr-defined]


async def test_oversized_body(scripted_proxy: ProxyHandle) -> None:
    big = b'{"model":"m","messages":[{"role":"user","content":"' + b"x" * (2 * 1024 * 1024) + b'"}]}'
    got, body = await post(scripted_proxy, "anthropic", big)
    assert got == 413 and shape_ok("anthropic", body)
    await still_serving(scripted_proxy)


async def test_unknown_model_when_served_models_given(scripted_proxy: ProxyHandle) -> None:
    scripted_proxy.server.served = frozenset({"policy"})  # type: ignore[attr-defined]
    got, body = await post(scripted_proxy, "openai_chat",
                           b'{"model":"gpt-9","messages":[{"role":"user","content":"x"}]}')
    assert got == 404 and body["error"]["code"] == "model_not_found"
    got, body = await post(scripted_proxy, "google", b'{"contents":[{"parts":[{"text":"x"}]}]}')
    assert got == 404 and body["error"]["status"] == "NOT_FOUND"


async def test_unknown_endpoint_and_images(scripted_proxy: ProxyHandle) -> None:
    async with aiohttp.ClientSession() as s, s.get(scripted_proxy.base_url + "/nope") as r:
        assert r.status == 404
    img = b'{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}'
    got, body = await post(scripted_proxy, "anthropic", img)
    assert got == 400 and "image content is not supported" in body["error"]["message"]


async def test_context_overflow_is_recognisable(scripted_proxy: ProxyHandle) -> None:
    long = ("word " * 5000).encode()
    data = b'{"model":"m","messages":[{"role":"user","content":"' + long + b'"}]}'
    got, body = await post(scripted_proxy, "openai_chat", data)
    assert got == 400 and body["error"]["code"] == "context_length_exceeded"
    got, body = await post(scripted_proxy, "anthropic", data)
    assert got == 400 and "prompt is too long" in body["error"]["message"]
    assert scripted_proxy.engine.calls == []


async def test_engine_errors_map_to_provider_5xx(scripted_proxy: ProxyHandle) -> None:
    from polar_hpc.engine.errors import EngineTimeout, EngineUnavailable

    h = scripted_proxy
    h.engine.script = [EngineUnavailable("down"), EngineTimeout("slow")]
    ok = b'{"contents":[{"parts":[{"text":"x"}]}]}'
    got, body = await post(h, "google", ok)
    assert got == 503 and body["error"]["status"] == "UNAVAILABLE"
    got, body = await post(h, "google", ok)
    assert got == 504 and body["error"]["status"] == "DEADLINE_EXCEEDED"
    recs = h.server.close_session(h.api_key)  # type: ignore[attr-defined]
    assert [r.finish_reason for r in recs] == ["error", "error"]
    # a failed call's record still has its prompt (set after the engine call, failed or not)
    assert [r.prompt_ids.tolist() for r in recs] == [c.input_ids for c in h.engine.calls]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
KEYS = ["model", "messages", "input", "instructions", "contents", "tools", "tool_choice", "system", "stream",
        "max_tokens", "thinking", "reasoning", "generationConfig", "systemInstruction", "stop", "temperature"]
bodies = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6)
roles = st.sampled_from(["user", "assistant", "system", "tool", "developer", "model", 3, None])
msgs = st.lists(st.fixed_dictionaries({"role": roles},
                                      optional={"content": json_values, "parts": json_values,
                                                "tool_calls": json_values, "type": st.text(max_size=8)}),
                max_size=3)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(provider=st.sampled_from(list(PATHS)), body=bodies, messages=msgs)
async def test_fuzz_never_500(scripted_proxy: ProxyHandle, provider: str, body: dict, messages: list) -> None:  # type: ignore[type-arg]
    import msgspec

    if messages:
        body[{"google": "contents", "openai_responses": "input"}.get(provider, "messages")] = messages
    body.pop("stream", None)
    status, out = await post(scripted_proxy, provider, msgspec.json.encode(body))
    assert status < 500, out
    if status != 200:
        assert shape_ok(provider, out), out



@pytest.mark.parametrize("limit", [4096, 3 * 1024 * 1024])
async def test_a_body_over_the_limit_is_refused_and_the_server_keeps_serving(qwen3_template: object,
                                                                            limit: int) -> None:
    from polar_hpc.proxy.server import ProxyServer
    from polar_hpc.proxy.settings import ProxySettings
    from tests.fixtures.proxy import ScriptedEngine

    settings = ProxySettings(model_name="policy", context_length=4096, max_new_tokens=16, max_body_bytes=limit)
    server = ProxyServer(qwen3_template, ScriptedEngine(qwen3_template), settings)  # type: ignore[arg-type]
    h = ProxyHandle(server, ScriptedEngine(qwen3_template), await server.start(), server.open_session("s"),
                    qwen3_template)
    try:
        for provider in ("openai_chat", "anthropic"):
            body = b'{"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}'
            got, err = await post(h, provider, body.ljust(limit + 1))  # JSON padded with blanks
            assert got == 413 and shape_ok(provider, err) and f"exceeds {limit} bytes" in str(err), err
            got, err = await post(h, provider, body.ljust(limit))  # at the limit: served (aiohttp's default is 1 MiB)
            assert got == 200, err
    finally:
        await server.stop()
