"""SGLangEngine.open_stream against the FAKE StubServer (failures and chunk kinds a real server won't produce on
demand): delta and cumulative chunks give the same result, an abort ends the stream with what was sent, a 5xx
before the stream starts is retried on the next server."""

from __future__ import annotations

import asyncio

import numpy as np

from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.sim.sglang_stub import StubServer, error_response
from polar_hpc.wire.calls import SamplingParams
from tests.fixtures.waits import async_wait_for

PROMPT = [5, 6, 7]


async def _run(stub: StubServer, n: int = 40) -> tuple[list[list[int]], object]:
    async with SGLangEngine([await stub.start()]) as engine:
        stream = await engine.open_stream(PROMPT, SamplingParams(max_new_tokens=n), stop_token_ids=[999])
        try:
            deltas = [ids async for ids, _ in stream]
        finally:
            await stream.close()
    await stub.stop()
    return deltas, stream.result


async def test_delta_and_cumulative_chunks_give_the_same_result(polar_log: list[str]) -> None:
    """(and a server streaming cumulative chunks, each repeating every token so far, is named in a warning)"""
    d_deltas, d = await _run(StubServer(stop_at_end=True))
    assert not polar_log
    c_deltas, c = await _run(StubServer(stop_at_end=True, cumulative=True))
    warned = [m for m in polar_log if "streams cumulative chunks" in m]
    assert len(warned) == 1 and "--incremental-streaming-output" in warned[0]
    flat = [t for x in d_deltas for t in x]
    assert flat == [t for x in c_deltas for t in x] and len(flat) == 40
    for r in (d, c):
        assert r.finish_reason == "stop" and r.matched_stop == 999  # type: ignore[attr-defined]
        assert r.output_ids.tolist() == flat  # type: ignore[attr-defined]
        assert np.all(r.output_logprobs == -0.5)  # type: ignore[attr-defined]


async def test_abort_keeps_what_was_sampled() -> None:
    stub = StubServer(token_delay_s=0.02, n_tokens=500)
    async with SGLangEngine([await stub.start()]) as engine:
        stream = await engine.open_stream(PROMPT, SamplingParams(max_new_tokens=500))
        got = 0
        try:
            async for ids, _ in stream:
                got += len(ids)
                if got >= 5:
                    stream.abort()
        finally:
            await stream.close()
    await stub.stop()
    res = stream.result
    assert res is not None and res.finish_reason == "abort"
    assert stub.aborted == [stream.rid] and 5 <= len(res.output_ids) == got < 50


async def test_a_stream_past_its_deadline_ends_with_engine_timeout_and_an_abort() -> None:
    import time

    import pytest

    from polar_hpc.engine.errors import EngineTimeout

    stub = StubServer(token_delay_s=0.05, n_tokens=500)
    async with SGLangEngine([await stub.start()]) as engine:
        stream = await engine.open_stream(PROMPT, SamplingParams(max_new_tokens=500), deadline=time.monotonic() + 0.4)
        got = 0
        try:
            with pytest.raises(EngineTimeout, match=f"rid {stream.rid}.*passed its deadline"):
                async for ids, _ in stream:
                    got += len(ids)
        finally:
            await stream.close()
        await async_wait_for(lambda: bool(stub.aborted), 1.0, "the stub's abort")
    await stub.stop()
    assert 0 < got < 100 and stub.aborted == [stream.rid]


async def test_5xx_before_the_stream_is_retried_elsewhere() -> None:
    async def fail(_: object) -> object:
        return error_response(503, "overloaded")

    bad, good = StubServer(fail), StubServer(n_tokens=3)  # type: ignore[arg-type]
    async with SGLangEngine([await bad.start(), await good.start()], EngineSettings(backoff_s=0.01)) as engine:
        stream = await engine.open_stream(PROMPT, SamplingParams(max_new_tokens=3), session_id="s")
        res = await stream.drain()
        await stream.close()
    await bad.stop()
    await good.stop()
    assert res.output_ids.tolist() == [8, 9, 10] and res.server == good.url
    assert len(bad.requests) + len(good.requests) >= 2


async def test_the_engine_asks_for_its_stream_interval_and_hands_deltas_out_in_growing_batches() -> None:
    """The request carries ``stream_interval``; the stub (SGLang's cadence) sends the first token, then a chunk
    per interval; the wait before the connection is read again starts at ``FIRST_DELAY_S`` after the first
    hand-out and doubles up to ``stream_max_delay_s``."""
    from polar_hpc.engine.stream import FIRST_DELAY_S

    stub = StubServer(n_tokens=150, token_delay_s=0.002)
    async with SGLangEngine([await stub.start()], EngineSettings(stream_interval=5, stream_max_delay_s=0.05)) as engine:
        stream = await engine.open_stream(PROMPT, SamplingParams(max_new_tokens=150))
        delays, got = [], []
        try:
            async for ids, _ in stream:
                got += ids
                delays.append(stream._delay)
        finally:
            await stream.close()
    await stub.stop()
    assert stub.requests[0].sampling_params.stream_interval == 5
    assert stream.result is not None and stream.result.output_ids.tolist() == got and len(got) == 150
    assert delays[:3] == [FIRST_DELAY_S, 2 * FIRST_DELAY_S, 0.05] and set(delays[2:]) == {0.05}


async def test_streams_wait_until_the_same_ticks_so_that_they_wake_together(monkeypatch) -> None:
    """Every wait between hand-outs ends on a multiple of ``TICK_S`` of the monotonic clock, whatever the stream.
    The end is the stream's own clock reading plus the pause it asks for, so the check does not depend on how
    late this machine schedules anything."""
    import time
    import types

    from polar_hpc.engine import stream as stream_module
    from polar_hpc.engine.stream import TICK_S

    last_reading = [0.0]

    def monotonic() -> float:
        last_reading[0] = time.monotonic()
        return last_reading[0]

    monkeypatch.setattr(stream_module, "time", types.SimpleNamespace(monotonic=monotonic))
    stub = StubServer(n_tokens=60, token_delay_s=0.003)
    ends: list[float] = []
    async with SGLangEngine([await stub.start()], EngineSettings(stream_max_delay_s=0.05)) as engine:

        async def one(n: int) -> list[int]:
            await asyncio.sleep(0.007 * n)  # the streams start out of step
            stream = await engine.open_stream(PROMPT, SamplingParams(max_new_tokens=60))
            pause = stream._body.pause

            async def recorded(seconds: float) -> None:
                ends.append(last_reading[0] + seconds)  # the reading the wait was computed from: no await between
                await pause(seconds)

            stream._body.pause = recorded  # type: ignore[method-assign]
            try:
                return (await stream.drain()).output_ids.tolist()
            finally:
                await stream.close()

        results = await asyncio.gather(one(0), one(1), one(2))
    await stub.stop()
    assert all(len(r) == 60 for r in results) and len(ends) >= 6
    assert all(abs(end / TICK_S - round(end / TICK_S)) < 1e-6 for end in ends), ends


async def test_the_stub_sends_chunks_at_sglangs_cadence() -> None:
    import aiohttp
    import msgspec

    stub = StubServer(n_tokens=10)
    body = {"input_ids": PROMPT, "stream": True, "return_logprob": True,
            "sampling_params": {"max_new_tokens": 10, "stream_interval": 4}}
    async with aiohttp.ClientSession() as http, http.post(await stub.start() + "/generate", json=body) as resp:
        raw = await resp.read()
    await stub.stop()
    frames = [f[6:] for f in raw.decode().split("\n\n") if f.startswith("data: ")][:-1]
    chunks = [msgspec.json.decode(f)["meta_info"] for f in frames]
    assert [c["completion_tokens"] for c in chunks] == [1, 5, 9, 10]
    assert [len(c["output_token_logprobs"]) for c in chunks] == [1, 4, 4, 1]
