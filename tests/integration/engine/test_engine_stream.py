"""SGLangEngine.open_stream against the real reference server (delta chunks): the streamed result equals the
non-streamed one for the same seed (ids, finish; logprobs within float noise: tests/fixtures/floats.py), the
request satisfies SGLang's schema, an abort stops the server's work and
keeps the tokens sampled until then."""

from __future__ import annotations

import asyncio
import time

import numpy as np

from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.engine.sglang_schema import validate_generate_request
from polar_hpc.reference.process import ReferenceHandle
from polar_hpc.wire.calls import SamplingParams
from tests.fixtures.floats import assert_logprobs_close

PROMPT = [151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198]
CASES = [
    SamplingParams(max_new_tokens=24, temperature=0.0),
    SamplingParams(max_new_tokens=30, temperature=1.0, top_p=0.9, seed=11),
    SamplingParams(max_new_tokens=30, temperature=1.0, stop=["e"], seed=3),
]


async def test_streamed_result_equals_generate(reference_server: ReferenceHandle) -> None:
    sent: list[bytes] = []
    async with SGLangEngine([reference_server.url], EngineSettings(context_length=32768),
                            request_hook=sent.append) as engine:
        for sampling in CASES:
            plain = await engine.generate(PROMPT, sampling, stop_token_ids=[151645])
            stream = await engine.open_stream(PROMPT, sampling, stop_token_ids=[151645])
            deltas: list[list[int]] = []
            try:
                async for ids, lps in stream:
                    assert len(ids) == len(lps) > 0
                    deltas.append(ids)
            finally:
                await stream.close()
            res = stream.result
            assert res is not None
            assert [t for d in deltas for t in d] == res.output_ids.tolist()
            assert deltas  # (chunks that arrive together come as one delta)
            assert np.array_equal(res.output_ids, plain.output_ids)
            assert_logprobs_close(res.output_logprobs, plain.output_logprobs)
            assert (res.finish_reason, res.matched_stop) == (plain.finish_reason, plain.matched_stop)
            assert res.prompt_tokens == plain.prompt_tokens == len(PROMPT)
            assert res.weight_version == plain.weight_version
    assert len(sent) == 2 * len(CASES)
    for body in sent:
        assert validate_generate_request(body).stream in (True, False)
    assert [validate_generate_request(b).stream for b in sent] == [False, True] * len(CASES)


async def test_abort_stops_the_server_and_keeps_the_sampled_tokens(reference_server: ReferenceHandle) -> None:
    async with SGLangEngine([reference_server.url]) as engine:
        stream = await engine.open_stream(PROMPT, SamplingParams(max_new_tokens=4000, temperature=1.0, seed=5))
        seen = 0
        started = time.monotonic()
        try:
            async for ids, _ in stream:
                seen += len(ids)
                if seen >= 3 and stream.result is None:
                    stream.abort()
        finally:
            await stream.close()
        assert time.monotonic() - started < 10
        res = stream.result
        assert res is not None and res.finish_reason == "abort"
        assert len(res.output_ids) == len(res.output_logprobs) == seen < 4000
        # the server is free again: a new call completes at once
        after = await asyncio.wait_for(engine.generate(PROMPT, SamplingParams(max_new_tokens=2)), 30)
        assert len(after.output_ids) == 2


async def test_stream_interval_sends_the_first_token_then_one_chunk_per_interval(
    reference_server: ReferenceHandle,
) -> None:
    """SGLang 0.5.23's per-request ``sampling_params.stream_interval`` (read in its ``output_streamer.py``): the
    first token at once, then a chunk whenever that many are unsent, and the last; the reference server does
    the same (with delta chunks, as SGLang given ``--incremental-streaming-output``), and the streamed result
    does not depend on it."""
    import aiohttp
    import msgspec

    body = {"input_ids": PROMPT, "stream": True, "return_logprob": True,
            "sampling_params": {"max_new_tokens": 10, "ignore_eos": True, "temperature": 0.0, "stream_interval": 4}}
    async with aiohttp.ClientSession() as http, http.post(reference_server.url + "/generate", json=body) as resp:
        raw = await resp.read()
    frames = [f[6:] for f in raw.decode().split("\n\n") if f.startswith("data: ")]
    assert frames[-1] == "[DONE]"
    chunks = [msgspec.json.decode(f) for f in frames[:-1]]
    assert [c["meta_info"]["completion_tokens"] for c in chunks] == [1, 5, 9, 10]
    assert [len(c["meta_info"]["output_token_logprobs"]) for c in chunks] == [1, 4, 4, 1]  # deltas
    assert [t for c in chunks for t in c["output_ids"]] == [e[1] for c in chunks for e in c["meta_info"]
                                                             ["output_token_logprobs"]]
    results = []
    for interval in (1, 4):
        async with SGLangEngine([reference_server.url], EngineSettings(stream_interval=interval)) as engine:
            stream = await engine.open_stream(PROMPT, SamplingParams(max_new_tokens=12, temperature=0.0))
            results.append(await stream.drain())
            await stream.close()
    assert results[0].output_ids.tolist() == results[1].output_ids.tolist()
    assert_logprobs_close(results[0].output_logprobs, results[1].output_logprobs)
