"""pause_generation -> update_weights_from_disk -> continue_generation on a real reference server."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
import torch

from polar_hpc.assets import asset_path
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.errors import EngineError
from polar_hpc.reference.options import ReferenceOptions
from polar_hpc.reference.process import start_reference_server
from polar_hpc.wire.calls import SamplingParams
from tests.fixtures.floats import FORWARD_ATOL, assert_logprobs_close

pytestmark = pytest.mark.slow

PROMPT = [151644, 872, 198, 6023, 151645, 198, 151644, 77091, 198]
GREEDY = SamplingParams(max_new_tokens=8, temperature=0.0)


def perturbed_checkpoint(src: Path, dst: Path) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(src), dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * 0.5)
    model.save_pretrained(str(dst))
    for f in src.iterdir():
        if f.name.startswith("tokenizer") or f.suffix == ".jinja":
            shutil.copy(f, dst / f.name)
    return model.eval()


async def test_weight_update_changes_version_and_outputs(tmp_path: Path) -> None:
    src = asset_path("tiny-qwen3")
    new_model = perturbed_checkpoint(src, tmp_path / "step-1")
    with start_reference_server(src, ReferenceOptions(threads=1), log_path=tmp_path / "server.log") as server:
        async with SGLangEngine([server.url]) as engine:
            before = await engine.generate(PROMPT, GREEDY)
            assert before.weight_version == "default"

            long = asyncio.create_task(engine.generate(PROMPT, SamplingParams(max_new_tokens=5000, temperature=1.0)))
            await asyncio.sleep(0.5)
            await engine.pause_generation()  # mode abort: in-flight requests end with finish_reason abort
            interrupted = await asyncio.wait_for(long, 30)
            assert interrupted.finish_reason == "abort" and 0 < interrupted.completion_tokens < 5000

            waiting = asyncio.create_task(engine.generate(PROMPT, GREEDY))
            results = await engine.update_weights_from_disk(str(tmp_path / "step-1"), weight_version="step-1")
            assert results[0].success
            await asyncio.sleep(0.3)
            assert not waiting.done()  # paused: queued, not served
            await engine.continue_generation()
            after = await asyncio.wait_for(waiting, 30)

            assert after.weight_version == "step-1"
            assert after.output_logprobs.tolist() != before.output_logprobs.tolist()
            with torch.inference_mode():
                logits = new_model(input_ids=torch.tensor([PROMPT + after.output_ids.tolist()])).logits[0]
            lp = torch.log_softmax(logits[len(PROMPT) - 1 : -1], -1)
            expected = lp[torch.arange(8), torch.tensor(after.output_ids.tolist())].numpy()
            assert_logprobs_close(after.output_logprobs, expected, atol=FORWARD_ATOL)
            assert (await engine.model_info()).weight_version == "step-1"

            with pytest.raises(EngineError, match="update_weights_from_disk"):
                await engine.update_weights_from_disk(str(tmp_path / "missing"))
            assert (await engine.generate(PROMPT, GREEDY)).weight_version == "step-1"


async def test_pause_in_place_keeps_requests_and_reprefills(tmp_path: Path) -> None:
    src = asset_path("tiny-qwen3")
    perturbed_checkpoint(src, tmp_path / "step-1")
    with start_reference_server(src, ReferenceOptions(threads=1), log_path=tmp_path / "server.log") as server:
        async with SGLangEngine([server.url]) as engine:
            req = asyncio.create_task(engine.generate(PROMPT, SamplingParams(max_new_tokens=300, temperature=0.0)))
            await asyncio.sleep(0.5)
            await engine.pause_generation(mode="in_place")
            await engine.update_weights_from_disk(str(tmp_path / "step-1"), weight_version="2")
            await engine.continue_generation()
            res = await asyncio.wait_for(req, 60)
    assert res.finish_reason in ("length", "stop") and res.weight_version == "2"
