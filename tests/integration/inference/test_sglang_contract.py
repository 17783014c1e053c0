"""Contract: what the engine sends and what the reference server answers both satisfy SGLang's own schema."""

from __future__ import annotations

import json

import aiohttp
import msgspec
import numpy as np
import pytest

from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.engine.sglang_schema import validate_generate_request, validate_generate_response
from polar_hpc.reference.process import ReferenceHandle
from polar_hpc.wire.calls import SamplingParams
from tests.fixtures.floats import assert_logprobs_close

PROMPT = [151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198]

CASES = [
    (SamplingParams(max_new_tokens=4, temperature=0.0), None),
    (SamplingParams(max_new_tokens=6, temperature=0.8, top_p=0.9, top_k=50, seed=1), [151645]),
    (SamplingParams(max_new_tokens=6, temperature=1.0, stop=["a", "e"], seed=2), None),
]


async def test_engine_requests_and_server_responses_validate(reference_server: ReferenceHandle) -> None:
    sent: list[bytes] = []
    async with SGLangEngine([reference_server.url], EngineSettings(context_length=32768),
                            request_hook=sent.append) as engine:
        results = [await engine.generate(PROMPT, s, stop_token_ids=ids) for s, ids in CASES]
    assert len(sent) == len(CASES)
    for body in sent:
        validate_generate_request(body)
    async with aiohttp.ClientSession(trust_env=False) as http:
        for body, res in zip(sent, results, strict=True):
            req = json.loads(body)
            req["rid"] = req["rid"] + "-replay"
            async with http.post(f"{reference_server.url}/generate", json=req) as resp:
                raw = await resp.read()
            parsed = validate_generate_response(raw)
            assert [e.token_id for e in parsed.meta_info.output_token_logprobs] == res.output_ids.tolist()
            assert parsed.meta_info.finish_reason is not None


async def test_stream_chunks_and_abort_validate(reference_server: ReferenceHandle) -> None:
    engine = SGLangEngine([reference_server.url])
    req = engine.build_request(PROMPT, SamplingParams(max_new_tokens=4000, temperature=1.0), rid="contract-stream")
    req.stream = True
    body = msgspec.json.encode(req)
    validate_generate_request(body)
    chunks: list[bytes] = []
    async with aiohttp.ClientSession(trust_env=False) as http:
        async with http.post(f"{reference_server.url}/generate", data=body) as resp:
            async for line in resp.content:
                if not line.startswith(b"data: "):
                    continue
                data = line[6:].strip()
                if data == b"[DONE]":
                    break
                chunks.append(data)
                if len(chunks) == 3:
                    async with http.post(f"{reference_server.url}/abort_request",
                                         json={"rid": "contract-stream"}) as ab:
                        assert ab.status == 200
    await engine.close()
    parsed = [validate_generate_response(c) for c in chunks]
    assert parsed[0].meta_info.finish_reason is None
    last = parsed[-1].meta_info
    assert type(last.finish_reason).__name__ == "FinishAbort"
    streamed = sum(len(c.meta_info.output_token_logprobs or []) for c in parsed)  # delta chunks
    assert last.completion_tokens == streamed < 4000


async def test_teacher_forcing_request_and_response_validate(reference_server: ReferenceHandle) -> None:
    """Teacher forcing: the forced ids' logprobs equal those the server reports when it samples the same ids
    greedily (the same model, the same context), and both bodies satisfy SGLang's schema."""
    sent: list[bytes] = []
    async with SGLangEngine([reference_server.url], EngineSettings(context_length=32768),
                            request_hook=sent.append) as engine:
        sampled = await engine.generate(PROMPT, SamplingParams(max_new_tokens=5, temperature=0.0))
        forced = sampled.output_ids.tolist()
        result = await engine.teacher_force(PROMPT, forced)
        again = await engine.teacher_force(PROMPT, forced)  # the prompt is now in the prefix cache
    assert result.logprobs.dtype == np.float32 and result.logprobs.shape == (len(forced),)
    assert_logprobs_close(result.logprobs, sampled.output_logprobs)
    assert_logprobs_close(again.logprobs, result.logprobs)
    assert result.prompt_tokens == len(PROMPT) + len(forced) and again.cached_tokens > 0
    body = validate_generate_request(sent[1])
    assert body.sampling_params.max_new_tokens == 0 and body.logprob_start_len == len(PROMPT) - 1
    async with aiohttp.ClientSession(trust_env=False) as http:
        req = json.loads(sent[1])
        req["rid"] += "-replay"
        async with http.post(f"{reference_server.url}/generate", json=req) as resp:
            parsed = validate_generate_response(await resp.read())
        meta = parsed.meta_info
        assert [e.token_id for e in meta.input_token_logprobs] == [PROMPT[-1], *forced]
        assert meta.input_token_logprobs[0].logprob is None and meta.completion_tokens == 0
        req["sampling_params"]["max_new_tokens"] = 4
        async with http.post(f"{reference_server.url}/generate", json=req) as resp:
            assert resp.status == 400 and "max_new_tokens = 0" in (await resp.json())["error"]["message"]


@pytest.mark.slow  # one short generation on tiny-qwen3 (the session's reference server), streamed and not
async def test_top_logprobs_have_sglangs_shape(reference_server: ReferenceHandle) -> None:
    """``top_logprobs_num`` = k: per sampled token, k ``[logprob, id, null]`` entries, most likely first, in
    SGLang's ``output_top_logprobs`` shape (its own schema validates the body); the engine keeps them as (n, k)
    arrays, the same whole and streamed; the sampled token's logprob is one of them when it is in the top k."""
    k = 3
    sent: list[bytes] = []
    sampling = SamplingParams(max_new_tokens=5, temperature=0.7, seed=3)
    async with SGLangEngine([reference_server.url], EngineSettings(context_length=32768,
                                                                   top_logprobs=k), request_hook=sent.append) as engine:
        res = await engine.generate(PROMPT, sampling)
        stream = await engine.open_stream(PROMPT, sampling)
        async for _ in stream:
            pass
        streamed = stream.result
    assert json.loads(sent[0])["top_logprobs_num"] == k
    validate_generate_request(sent[0])
    req = json.loads(sent[0]) | {"rid": "top-k-replay"}
    async with aiohttp.ClientSession(trust_env=False) as http:
        async with http.post(f"{reference_server.url}/generate", json=req) as resp:
            raw = await resp.read()
    meta = validate_generate_response(raw).meta_info
    rows = json.loads(raw)["meta_info"]["output_top_logprobs"]
    assert len(meta.output_top_logprobs) == len(rows) == meta.completion_tokens == res.output_ids.shape[0]
    assert all(len(r) == k and r[0][2] is None and [e[0] for e in r] == sorted((e[0] for e in r), reverse=True)
               for r in rows)
    assert res.output_top_ids.shape == res.output_top_logprobs.shape == (res.output_ids.shape[0], k)
    assert res.output_top_ids.tolist() == [[e[1] for e in r] for r in rows]  # seeded: the replay samples the same
    for tok, lp, ids, lps in zip(res.output_ids, res.output_logprobs, res.output_top_ids, res.output_top_logprobs,
                                 strict=True):
        assert lp <= lps[0] + 1e-5
        if tok in ids:
            assert lps[list(ids).index(tok)] == pytest.approx(lp, abs=1e-5)
    assert streamed is not None and streamed.output_ids.tolist() == res.output_ids.tolist()
    np.testing.assert_allclose(streamed.output_top_logprobs, res.output_top_logprobs, atol=1e-6)
