"""Engine client behaviour: retries, stickiness, failover, deadlines, error mapping.

The servers here are the in-process FAKE ``polar_hpc.sim.sglang_stub.StubServer`` (they must fail on demand);
failover against real reference servers is in tests/integration/engine/test_engine_failover.py.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator

import msgspec
import pytest

from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.errors import ContextOverflow, EngineError, EngineTimeout, EngineUnavailable
from polar_hpc.engine.protocol import GenerateRequest
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.sim.sglang_stub import StubServer, error_response, instant_response, sleep_then
from polar_hpc.wire.calls import SamplingParams
from tests.fixtures.waits import async_wait_for

PARAMS = SamplingParams(max_new_tokens=3)


@pytest.fixture
async def stubs() -> AsyncIterator[list[StubServer]]:
    started: list[StubServer] = []
    yield started
    for s in started:
        await s.stop()


async def start(stubs: list[StubServer], behaviour=None) -> StubServer:
    s = StubServer(behaviour)
    await s.start()
    stubs.append(s)
    return s


def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there any more


async def test_result_fields(stubs: list[StubServer]) -> None:
    s = await start(stubs)
    async with SGLangEngine([s.url]) as engine:
        res = await engine.generate([7, 8, 9], PARAMS)
    assert res.output_ids.tolist() == [10, 11, 12] and res.output_ids.dtype.name == "int32"
    assert res.output_logprobs.tolist() == [-0.5] * 3 and res.output_logprobs.dtype.name == "float32"
    assert res.finish_reason == "length" and res.weight_version == "stub" and res.server == s.url
    assert res.rid == s.requests[0].rid and res.attempts == 1


async def test_retries_5xx_with_fresh_rid(stubs: list[StubServer]) -> None:
    calls = 0

    async def flaky(_: GenerateRequest):
        nonlocal calls
        calls += 1
        return error_response(503, "overloaded") if calls <= 2 else None

    s = await start(stubs, flaky)
    async with SGLangEngine([s.url], EngineSettings(backoff_s=0.01)) as engine:
        engine.pool.base_cooldown_s = 0.01
        res = await engine.generate([1], PARAMS)
    assert res.attempts == 3
    rids = [r.rid for r in s.requests]
    assert len(set(rids)) == 3 and res.rid == rids[-1]


async def test_connection_error_fails_over_and_marks_down(stubs: list[StubServer]) -> None:
    good = await start(stubs)
    bad = dead_url()
    async with SGLangEngine([bad, good.url], EngineSettings(backoff_s=0.01)) as engine:
        results = [await engine.generate([1], PARAMS, session_id=f"s{i}") for i in range(4)]
        assert all(r.server == good.url for r in results)
        assert not engine.pool.servers[0].is_up(time.monotonic())
        assert "Connect" in engine.pool.servers[0].last_error


async def test_session_stickiness_and_spread(stubs: list[StubServer]) -> None:
    a, b = await start(stubs, sleep_then(0.05)), await start(stubs, sleep_then(0.05))
    async with SGLangEngine([a.url, b.url]) as engine:
        first = await asyncio.gather(*(engine.generate([1], PARAMS, session_id=f"s{i}") for i in range(4)))
        servers = {f"s{i}": r.server for i, r in enumerate(first)}
        assert set(servers.values()) == {a.url, b.url}  # least-loaded spreads new sessions
        for _ in range(3):
            again = await asyncio.gather(*(engine.generate([1], PARAMS, session_id=s) for s in servers))
            assert [r.server for r in again] == list(servers.values())


async def test_sticky_session_moves_when_its_server_fails(stubs: list[StubServer]) -> None:
    down = False

    async def maybe_down(_: GenerateRequest):
        return error_response(500, "boom") if down else None

    a = await start(stubs, maybe_down)
    b = await start(stubs)
    async with SGLangEngine([a.url, b.url], EngineSettings(backoff_s=0.01)) as engine:
        first = await engine.generate([1], PARAMS, session_id="s")
        assert first.server == a.url
        down = True
        moved = await engine.generate([1], PARAMS, session_id="s")
        assert moved.server == b.url and moved.attempts == 2
        down = False
        assert (await engine.generate([1], PARAMS, session_id="s")).server == b.url  # stays on the new server


async def test_all_down_raises_unavailable_naming_servers() -> None:
    urls = [dead_url(), dead_url()]
    async with SGLangEngine(urls, EngineSettings(max_retries=2, backoff_s=0.01)) as engine:
        engine.pool.base_cooldown_s = 0.01
        with pytest.raises(EngineUnavailable) as info:
            await engine.generate([1], PARAMS)
    assert urls[0] in str(info.value) and "attempt 3" in str(info.value)


async def test_deadline_aborts_request(stubs: list[StubServer]) -> None:
    s = await start(stubs, sleep_then(5.0))
    async with SGLangEngine([s.url]) as engine:
        t0 = time.monotonic()
        with pytest.raises(EngineTimeout, match="deadline"):
            await engine.generate([1], PARAMS, deadline=time.monotonic() + 0.3)
        assert time.monotonic() - t0 < 3.0
        await asyncio.sleep(0.2)
    assert s.aborted == [s.requests[0].rid]


async def test_default_timeout_applies(stubs: list[StubServer]) -> None:
    s = await start(stubs, sleep_then(5.0))
    async with SGLangEngine([s.url], EngineSettings(request_timeout_s=0.2)) as engine:
        with pytest.raises(EngineTimeout):
            await engine.generate([1], PARAMS)


async def test_cancellation_aborts_request(stubs: list[StubServer]) -> None:
    s = await start(stubs, sleep_then(5.0))
    async with SGLangEngine([s.url]) as engine:
        task = asyncio.create_task(engine.generate([1], PARAMS))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert s.aborted == [s.requests[0].rid]


async def test_context_error_maps_to_context_overflow(stubs: list[StubServer]) -> None:
    async def refuse(_: GenerateRequest):
        return error_response(400, "The input (40000 tokens) is longer than the model's context length (32768 tokens).")

    s = await start(stubs, refuse)
    async with SGLangEngine([s.url]) as engine:
        with pytest.raises(ContextOverflow) as info:
            await engine.generate([1] * 5, PARAMS)
    assert info.value.prompt_tokens == 5 and len(s.requests) == 1  # 4xx is not retried


async def test_count_mismatch_is_an_error(stubs: list[StubServer]) -> None:
    async def short(req: GenerateRequest):
        from aiohttp import web

        body = instant_response(req).replace(b'"completion_tokens":3', b'"completion_tokens":4')
        return web.Response(body=body, content_type="application/json")

    s = await start(stubs, short)
    async with SGLangEngine([s.url]) as engine:
        with pytest.raises(EngineError, match="3 entries but completion_tokens is 4"):
            await engine.generate([1], PARAMS)


async def test_admin_fans_out_and_reports_failures(stubs: list[StubServer]) -> None:
    s = await start(stubs)
    bad = dead_url()
    async with SGLangEngine([s.url, bad]) as engine:
        health = await engine.health()
        assert health == {s.url: True, bad: False}
        with pytest.raises(EngineError, match=f"1/2 server.*{bad}"):
            await engine.continue_generation()


async def test_set_urls_during_retry_backoff(stubs: list[StubServer]) -> None:
    """The gateway refreshes the endpoints while a call waits to retry: the call holds its server, not an index
    into a list that was replaced, and goes to a server of the new list."""

    async def overloaded(_: GenerateRequest):
        return error_response(503, "overloaded")

    bad = await start(stubs, overloaded)
    good = await start(stubs)
    async with SGLangEngine([dead_url(), bad.url], EngineSettings(backoff_s=0.5)) as engine:
        engine.pool.base_cooldown_s = 30.0
        engine.pool.mark_failed(engine.pool.servers[0], "down")  # the call starts on the second server
        engine.pool.base_cooldown_s = 0.01
        call = asyncio.ensure_future(engine.generate([1], PARAMS, session_id="s"))
        await async_wait_for(lambda: bool(bad.requests), 1, "the overloaded server's first request")
        assert len(bad.requests) == 1 and not call.done()  # failed once, now in its backoff
        assert engine.pool.set_urls([good.url])
        res = await asyncio.wait_for(call, 5.0)
    assert res.server == good.url and res.attempts == 2 and len(bad.requests) == 1


async def test_missing_logprob_is_a_protocol_error(stubs: list[StubServer]) -> None:
    from aiohttp import web

    async def no_logprob(req: GenerateRequest):
        body = msgspec.json.decode(instant_response(req))
        body["meta_info"]["output_token_logprobs"][1][0] = None
        return web.json_response(body)

    s = await start(stubs, no_logprob)
    async with SGLangEngine([s.url]) as engine:
        with pytest.raises(EngineError, match=r"output_token_logprobs\[1\].*no logprob"):
            await engine.generate([1], PARAMS)


def test_pool_sticky_survives_set_urls_and_forget() -> None:
    from polar_hpc.engine.routing import ServerPool

    pool = ServerPool(["http://a", "http://b"])
    a = pool.choose("s1")
    a.inflight = 1  # s2 goes to the other server
    b = pool.choose("s2")
    assert (a.url, b.url) == ("http://a", "http://b")
    assert pool.set_urls(["http://b", "http://c"])
    assert pool.choose("s2") is b  # its server stayed in the list: still sticky
    assert pool.choose("s1").url in {"http://b", "http://c"}  # its server left: chosen again
    pool.forget("s2")
    assert "s2" not in pool._sticky


async def test_forget_session_drops_the_sticky_server(stubs: list[StubServer]) -> None:
    s = await start(stubs)
    async with SGLangEngine([s.url]) as engine:
        await engine.generate([1], PARAMS, session_id="s")
        assert "s" in engine.pool._sticky
        engine.forget_session("s")
        assert "s" not in engine.pool._sticky


def test_request_ids_are_unique_and_a_forked_child_draws_its_own_prefix() -> None:
    import multiprocessing

    from polar_hpc.engine.protocol import new_rid

    rids = [new_rid() for _ in range(10000)]
    assert len(set(rids)) == len(rids) and all(r.isalnum() and len(r) >= 24 for r in rids)
    parent, child = multiprocessing.get_context("fork").Pipe()
    proc = multiprocessing.get_context("fork").Process(target=lambda: child.send(new_rid()))
    proc.start()
    theirs = parent.recv()
    proc.join(10)
    assert proc.exitcode == 0 and theirs[:16] != rids[0][:16] and theirs not in rids
