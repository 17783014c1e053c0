"""The reference server against a direct forward pass of the same model, over real HTTP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import numpy as np
import pytest
import torch

from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.errors import ContextOverflow, EngineError
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.reference.process import ReferenceHandle
from polar_hpc.wire.calls import SamplingParams
from tests.fixtures.floats import FORWARD_ATOL, assert_logprobs_close

PROMPT = [151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198]


@pytest.fixture(scope="module")
def direct_model(reference_server: ReferenceHandle) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(reference_server.model_dir, dtype=torch.float32)
    model.eval()
    return model


def forward_logprobs(model: torch.nn.Module, prompt: list[int], output: list[int], temperature: float) -> np.ndarray:
    ids = torch.tensor([prompt + output])
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0].float()
    rows = logits[len(prompt) - 1 : len(prompt) - 1 + len(output)]
    if temperature > 0:
        rows = rows / temperature
    lp = torch.log_softmax(rows, dim=-1)
    return lp[torch.arange(len(output)), torch.tensor(output)].numpy()


async def post(url: str, body: dict) -> tuple[int, dict]:
    async with aiohttp.ClientSession(trust_env=False) as http, http.post(f"{url}/generate", json=body) as resp:
        return resp.status, await resp.json(content_type=None)


@pytest.mark.parametrize("temperature", [0.0, 1.0, 0.7])
async def test_logprobs_equal_direct_forward(reference_server: ReferenceHandle, direct_model,
                                             temperature: float) -> None:
    async with SGLangEngine([reference_server.url]) as engine:
        res = await engine.generate(PROMPT, SamplingParams(max_new_tokens=12, temperature=temperature, seed=7))
    assert res.completion_tokens == len(res.output_ids) == 12
    assert res.output_ids.dtype == np.int32 and res.output_logprobs.dtype == np.float32
    expected = forward_logprobs(direct_model, PROMPT, res.output_ids.tolist(), temperature)
    assert_logprobs_close(res.output_logprobs, expected, atol=FORWARD_ATOL)
    if temperature == 0.0:
        with torch.inference_mode():
            logits = direct_model(input_ids=torch.tensor([PROMPT + res.output_ids.tolist()])).logits[0]
        greedy = logits[len(PROMPT) - 1 : -1].argmax(-1).tolist()
        assert greedy == res.output_ids.tolist()


async def test_seed_reproduces_and_differs(reference_server: ReferenceHandle) -> None:
    params = SamplingParams(max_new_tokens=10, temperature=1.0, top_p=0.95, top_k=1000, seed=123)
    async with SGLangEngine([reference_server.url]) as engine:
        a = await engine.generate(PROMPT, params)
        b = await engine.generate(PROMPT, params)
        c = await engine.generate(PROMPT, SamplingParams(max_new_tokens=10, temperature=1.0, seed=124))
    assert a.output_ids.tolist() == b.output_ids.tolist()
    assert_logprobs_close(a.output_logprobs, b.output_logprobs)
    assert a.output_ids.tolist() != c.output_ids.tolist()


async def test_concurrent_requests_match_sequential(reference_server: ReferenceHandle) -> None:
    params = [SamplingParams(max_new_tokens=8, temperature=1.0, seed=s) for s in range(6)]
    async with SGLangEngine([reference_server.url]) as engine:
        together = await asyncio.gather(*(engine.generate(PROMPT, p) for p in params))
        alone = [await engine.generate(PROMPT, p) for p in params[:2]]
    for x, y in zip(together[:2], alone, strict=True):
        assert x.output_ids.tolist() == y.output_ids.tolist()
        assert_logprobs_close(x.output_logprobs, y.output_logprobs)
    assert len({r.rid for r in together}) == 6


async def test_stop_token_ids_and_strings(reference_server: ReferenceHandle) -> None:
    async with SGLangEngine([reference_server.url]) as engine:
        free = await engine.generate(PROMPT, SamplingParams(max_new_tokens=6, temperature=0.0))
        third = int(free.output_ids[2])
        by_id = await engine.generate(PROMPT, SamplingParams(max_new_tokens=6, temperature=0.0), stop_token_ids=[third])
        stop_text = free.text[-2:] if free.text else "x"
        by_str = await engine.generate(PROMPT, SamplingParams(max_new_tokens=6, temperature=0.0, stop=[stop_text]))
    first_hit = free.output_ids.tolist().index(third)
    assert by_id.finish_reason == "stop" and by_id.matched_stop == third
    assert by_id.output_ids.tolist() == free.output_ids.tolist()[: first_hit + 1]  # stop token kept
    assert by_str.finish_reason == "stop" and by_str.matched_stop == stop_text
    assert stop_text in by_str.text  # no_stop_trim=True keeps it in the text


async def test_abort_ends_request_with_abort_reason(reference_server: ReferenceHandle) -> None:
    body = {"input_ids": PROMPT, "rid": "abort-me", "return_logprob": True,
            "sampling_params": {"max_new_tokens": 5000, "temperature": 1.0, "ignore_eos": True}}
    async with aiohttp.ClientSession(trust_env=False) as http:
        task = asyncio.create_task(post(reference_server.url, body))
        await asyncio.sleep(0.5)
        async with http.post(f"{reference_server.url}/abort_request", json={"rid": "abort-me"}) as resp:
            assert resp.status == 200
        status, out = await asyncio.wait_for(task, 30)
    assert status == 200
    assert out["meta_info"]["finish_reason"]["type"] == "abort"
    assert 0 < out["meta_info"]["completion_tokens"] < 5000
    assert len(out["meta_info"]["output_token_logprobs"]) == out["meta_info"]["completion_tokens"]


async def test_engine_cancellation_aborts_on_server(reference_server: ReferenceHandle) -> None:
    async with SGLangEngine([reference_server.url]) as engine:
        task = asyncio.create_task(engine.generate(PROMPT, SamplingParams(max_new_tokens=20000, temperature=1.0)))
        await asyncio.sleep(0.5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.3)
        # the server is free again: a short request is served promptly
        res = await asyncio.wait_for(engine.generate(PROMPT, SamplingParams(max_new_tokens=2)), 30)
    assert res.completion_tokens == 2


async def test_a_client_that_leaves_mid_stream_is_no_server_error(reference_server: ReferenceHandle) -> None:
    """A caller that stops reading (cancelled, or done at the chunk with the finish reason) aborts its request; the
    server logs no traceback for it and serves the next request."""
    body = {"input_ids": PROMPT, "stream": True, "rid": "leaves-early",
            "sampling_params": {"max_new_tokens": 5000, "temperature": 1.0, "ignore_eos": True}}
    log_before = Path(reference_server.log_path).read_text()
    async with aiohttp.ClientSession(trust_env=False) as http:
        resp = await http.post(f"{reference_server.url}/generate", json=body)
        assert (await resp.content.readline()).startswith(b"data: ")
        resp.close()
    await asyncio.sleep(1.0)
    status, out = await post(reference_server.url, {"input_ids": PROMPT, "sampling_params": {"max_new_tokens": 2}})
    assert status == 200 and out["meta_info"]["completion_tokens"] == 2
    new_log = Path(reference_server.log_path).read_text()[len(log_before):]
    assert "Traceback" not in new_log and "Error handling request" not in new_log, new_log


async def test_context_length_error_has_sglang_shape(reference_server: ReferenceHandle) -> None:
    status, out = await post(reference_server.url, {"input_ids": [1] * 40000, "sampling_params": {"max_new_tokens": 4}})
    assert status == 400
    assert "longer than the model's context length (32768 tokens)" in out["error"]["message"]
    async with SGLangEngine([reference_server.url]) as engine:
        with pytest.raises(ContextOverflow, match="context length"):
            await engine.generate([1] * 40000, SamplingParams(max_new_tokens=4))
        with pytest.raises(ContextOverflow, match="leaves no room"):
            SGLangEngine([reference_server.url],
                         EngineSettings(context_length=100)).build_request([1] * 100, SamplingParams())
        clamped = SGLangEngine([reference_server.url], EngineSettings(context_length=len(PROMPT) + 3)).build_request(
            PROMPT, SamplingParams(max_new_tokens=50))
        assert clamped.sampling_params.max_new_tokens == 3


async def test_unknown_sampling_key_is_refused(reference_server: ReferenceHandle) -> None:
    status, out = await post(reference_server.url, {"input_ids": PROMPT, "sampling_params": {"max_tokens": 4}})
    assert status == 400
    assert "max_tokens" in out["error"]["message"]
    async with SGLangEngine([reference_server.url]) as engine:
        with pytest.raises(EngineError, match="HTTP 400"):
            await engine.generate(PROMPT, SamplingParams(max_new_tokens=2, top_p=1.5))


async def test_streaming_chunks_are_deltas(reference_server: ReferenceHandle) -> None:
    """As SGLang launched with ``--incremental-streaming-output`` (how polar-hpc launches it): each chunk carries
    its new tokens and text, which add up to the non-streamed reply."""
    body = {"input_ids": PROMPT, "stream": True, "return_logprob": True,
            "sampling_params": {"max_new_tokens": 5, "temperature": 0.0}}
    frames = []
    async with (aiohttp.ClientSession(trust_env=False) as http,
                http.post(f"{reference_server.url}/generate", json=body) as resp):
        assert resp.headers["Content-Type"].startswith("text/event-stream")
        async for line in resp.content:
            if line.startswith(b"data: "):
                frames.append(line[6:].strip())
    assert frames[-1] == b"[DONE]"
    chunks = [json.loads(f) for f in frames[:-1]]
    assert [len(c["output_ids"]) for c in chunks] == [1, 1, 1, 1, 1]
    assert [c["meta_info"]["completion_tokens"] for c in chunks] == [1, 2, 3, 4, 5]
    assert chunks[-1]["meta_info"]["finish_reason"]["type"] == "length"
    assert chunks[0]["meta_info"]["finish_reason"] is None
    ids = [t for c in chunks for t in c["output_ids"]]
    assert [e[1] for c in chunks for e in c["meta_info"]["output_token_logprobs"]] == ids
    async with (aiohttp.ClientSession(trust_env=False) as http,
                http.post(f"{reference_server.url}/generate", json={**body, "stream": False}) as resp):
        whole = await resp.json()
    assert whole["output_ids"] == ids and whole["text"] == "".join(c["text"] for c in chunks)


async def test_health_model_info_and_models(reference_server: ReferenceHandle) -> None:
    async with SGLangEngine([reference_server.url]) as engine:
        assert await engine.health() == {reference_server.url: True}
        info = await engine.model_info()
    assert Path(info.model_path) == Path(reference_server.model_dir)
    assert info.context_length == 32768
    async with aiohttp.ClientSession(trust_env=False) as http, http.get(f"{reference_server.url}/v1/models") as resp:
        cards = (await resp.json())["data"]
    assert cards[0]["id"] == "tiny-qwen3"


async def test_prefix_cache_serves_the_next_turn(reference_server: ReferenceHandle, direct_model) -> None:
    async with SGLangEngine([reference_server.url]) as engine:
        first = await engine.generate(PROMPT + [42], SamplingParams(max_new_tokens=6, temperature=0.0))
        turn2 = PROMPT + [42] + first.output_ids.tolist() + [151645, 198, 151644, 872, 198, 9707]
        second = await engine.generate(turn2, SamplingParams(max_new_tokens=6, temperature=1.0, seed=5))
    assert first.cached_tokens < len(PROMPT) + 1
    assert second.cached_tokens >= len(PROMPT) + 1 + 5  # everything the first request forwarded
    expected = forward_logprobs(direct_model, turn2, second.output_ids.tolist(), 1.0)
    assert_logprobs_close(second.output_logprobs, expected, atol=FORWARD_ATOL)
