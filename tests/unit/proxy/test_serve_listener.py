"""``ProxyServer.serve_listener``: a listening socket handed out of a sandbox (``runtime.bridge = "handoff"``) is
served like the proxy's own port (sessions by their keys, unknown keys refused) until its stop is awaited."""

from __future__ import annotations

import socket

import aiohttp
import pytest

from tests.fixtures.proxy import ProxyHandle

BODY = b'{"model":"m","messages":[{"role":"user","content":"hi"}]}'


async def _post(url: str, key: str) -> int:
    async with aiohttp.ClientSession() as s, s.post(url + "/v1/chat/completions", data=BODY, headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {key}"}) as r:
        await r.read()
        return r.status


async def test_a_handed_off_listener_serves_sessions_until_stopped(scripted_proxy: ProxyHandle) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop = await scripted_proxy.server.serve_listener(listener)  # type: ignore[attr-defined]
    assert await _post(url, scripted_proxy.api_key) == 200
    assert await _post(url, "sk-polar-not-a-session") == 401
    await stop()
    listener.close()
    with pytest.raises(aiohttp.ClientConnectionError):
        await _post(url, scripted_proxy.api_key)
    assert await _post(scripted_proxy.base_url, scripted_proxy.api_key) == 200, "the proxy's own port still serves"
