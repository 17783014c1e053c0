"""Every /generate body the engine builds satisfies SGLang 0.5.23's own schema; bad bodies do not."""

from __future__ import annotations

import json

import msgspec
import pytest

from polar_hpc.assets import AssetError, asset_path
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.engine.sglang_schema import (
    SchemaViolation,
    validate_generate_request,
    validate_generate_response,
)
from polar_hpc.wire.calls import SamplingParams


@pytest.fixture(scope="module", autouse=True)
def _api_types() -> None:
    try:
        asset_path("sglang-api-types")
    except AssetError as err:
        pytest.fail(str(err), pytrace=False)


SAMPLINGS = [
    SamplingParams(),
    SamplingParams(max_new_tokens=5, temperature=0.0),
    SamplingParams(max_new_tokens=64, temperature=0.7, top_p=0.9, top_k=40, stop=["</tool_call>", "\n\n"], seed=3),
]


@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("stop_ids", [None, [151645, 151643]])
def test_engine_bodies_validate(sampling: SamplingParams, stop_ids: list[int] | None) -> None:
    engine = SGLangEngine(["http://127.0.0.1:1"], EngineSettings(context_length=4096))
    req = engine.build_request([151644, 872, 198], sampling, stop_token_ids=stop_ids, rid="r-1")
    parsed = validate_generate_request(msgspec.json.encode(req))
    sp = parsed.sampling_params
    assert parsed.input_ids == [151644, 872, 198] and parsed.rid == "r-1"
    assert parsed.return_logprob is True and parsed.logprob_start_len == -1
    assert sp.max_new_tokens == (sampling.max_new_tokens or 1024)
    assert sp.skip_special_tokens is False and sp.no_stop_trim is True
    assert sp.stop_token_ids == stop_ids
    assert sp.sampling_seed == sampling.seed


def test_unknown_sampling_key_is_rejected() -> None:
    body = json.dumps({"input_ids": [1, 2], "sampling_params": {"max_tokens": 8}})
    with pytest.raises(SchemaViolation, match="unknown field `max_tokens`, expected one of `max_new_tokens`"):
        validate_generate_request(body)


def test_unknown_top_level_key_is_ignored_but_bad_types_are_not() -> None:
    validate_generate_request(json.dumps({"input_ids": [1], "not_a_field": 1}))
    with pytest.raises(SchemaViolation):
        validate_generate_request(json.dumps({"input_ids": "1 2", "sampling_params": {}}))


def test_response_with_untyped_finish_reason_is_rejected() -> None:
    good = {"text": "", "output_ids": [5], "meta_info": {"id": "x", "prompt_tokens": 1, "completion_tokens": 1,
            "finish_reason": {"type": "length", "length": 1}, "output_token_logprobs": [[-0.5, 5, None]]}}
    validate_generate_response(json.dumps(good))
    bad = {**good, "meta_info": {**good["meta_info"], "finish_reason": {"type": "done"}}}
    with pytest.raises(SchemaViolation, match="finish_reason"):
        validate_generate_response(json.dumps(bad))
    worse = {**good, "meta_info": {**good["meta_info"], "output_token_logprobs": [["a", 5, None]]}}
    with pytest.raises(SchemaViolation):
        validate_generate_response(json.dumps(worse))


def test_stub_responses_validate() -> None:
    from polar_hpc.engine.protocol import GenerateRequest, WireSampling
    from polar_hpc.sim.sglang_stub import instant_response

    req = GenerateRequest(input_ids=[1, 2], sampling_params=WireSampling(max_new_tokens=4), rid="x",
                          return_logprob=True)
    parsed = validate_generate_response(instant_response(req))
    assert [e.token_id for e in parsed.meta_info.output_token_logprobs] == parsed.output_ids
