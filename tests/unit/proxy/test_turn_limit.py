"""``agent.max_turns`` for a harness without a turn limit of its own: the proxy counts the session's agent calls
(side requests not counted), refuses the one past the limit in the provider's error envelope, and says so to the
rank (``turn_limited`` / ``wait_turn_limit``), which stops the harness."""

from __future__ import annotations

import asyncio

import openai
import pytest

from polar_hpc.harness import get_adapter
from tests.fixtures.proxy import ProxyHandle
from tests.fixtures.sdk_clients import SdkClients

TITLE = "You are a title generator. You output ONLY a thread title."


async def test_the_call_past_max_turns_is_refused_and_told(scripted_proxy: ProxyHandle, sdk: SdkClients) -> None:
    server = scripted_proxy.server
    key = server.open_session("turns/0#0", max_turns=2)  # type: ignore[attr-defined]
    waiter = asyncio.create_task(server.wait_turn_limit(key))  # type: ignore[attr-defined]
    client = sdk.openai(scripted_proxy.base_url, key)
    for i in range(2):
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"turn {i}"}])
        side = [{"role": "system", "content": TITLE}, {"role": "user", "content": "name this"}]
        await client.chat.completions.create(model="m", messages=side)  # type: ignore[arg-type]
    assert server.turn_limited(key) is None and not waiter.done()  # type: ignore[attr-defined]
    with pytest.raises(openai.BadRequestError) as info:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "turn 3"}])
    assert "agent.max_turns=2 reached" in str(info.value)
    await asyncio.wait_for(waiter, 5)
    assert server.turn_limited(key) == 2  # type: ignore[attr-defined]
    records = server.close_session(key)  # type: ignore[attr-defined]
    assert [r.side_request for r in records] == [False, True, False, True]  # the refused call made no record


async def test_no_limit_without_max_turns(scripted_proxy: ProxyHandle, sdk: SdkClients) -> None:
    client = sdk.openai(scripted_proxy.base_url, scripted_proxy.api_key)
    for i in range(5):
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"turn {i}"}])
    assert scripted_proxy.server.turn_limited(scripted_proxy.api_key) is None  # type: ignore[attr-defined]


def test_pi_is_limited_by_the_proxy_claude_code_by_itself() -> None:
    assert not get_adapter("pi").own_turn_limit  # pi has no turn limit: the proxy enforces agent.max_turns
    assert get_adapter("claude_code").own_turn_limit  # --max-turns
