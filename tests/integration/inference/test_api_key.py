"""The reference server with an API key (as SGLang's --api-key): 401 without it, served with it."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.errors import EngineError
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.reference.options import ReferenceOptions
from polar_hpc.reference.process import start_reference_server
from polar_hpc.wire.calls import SamplingParams

BODY = {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 2}}


@pytest.mark.slow  # ~30 s (its own reference server start, then mostly waiting)
async def test_requests_without_the_key_get_401(tiny_qwen3_dir: Path, tmp_path: Path) -> None:
    with start_reference_server(tiny_qwen3_dir, ReferenceOptions(threads=1), api_key="k3y",
                                log_path=tmp_path / "s.log") as ref:
        async with aiohttp.ClientSession(trust_env=False) as http:
            for path, body in [("/generate", BODY), ("/pause_generation", {}), ("/update_weights_from_disk", {})]:
                async with http.post(ref.url + path, json=body) as r:
                    assert r.status == 401 and await r.json() == {"error": "Unauthorized"}, path
            async with http.post(ref.url + "/generate", json=BODY, headers={"Authorization": "Bearer wrong"}) as r:
                assert r.status == 401
            async with http.get(ref.url + "/health") as r:
                assert r.status == 200
        async with SGLangEngine([ref.url], EngineSettings(max_retries=0)) as engine:
            with pytest.raises(EngineError, match="HTTP 401"):
                await engine.generate([1, 2, 3], SamplingParams(max_new_tokens=2))
        async with SGLangEngine([ref.url], api_key="k3y") as engine:
            res = await engine.generate([1, 2, 3], SamplingParams(max_new_tokens=2))
            assert res.completion_tokens == 2
            assert (await engine.model_info()) is not None
            await engine.pause_generation("in_place")
            await engine.continue_generation()
