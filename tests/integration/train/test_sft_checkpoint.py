"""An oracle corpus through a harness to a checkpoint both consumers load: the shell harness's own agent solves a
real git repo through the proxy under the oracle policy (the fixture of ``test_oracle_corpus``), the session goes
into a shard, ``polar-hpc train sft`` fine-tunes the tiny Qwen3 on its token rows, and the model dir it writes is
served by a fresh reference server (one ``/generate``) and loaded by ``train grpo``'s ``load_policy``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import pytest

from polar_hpc.cli import main
from polar_hpc.config.run import ShardConfig
from polar_hpc.inference.reference.process import start_reference_server
from polar_hpc.store.writer import ShardWriter
from polar_hpc.train.grpo.run import load_policy
from polar_hpc.train.sft.run import SUMMARY, SftResult
from polar_hpc.wire.rundir import RunDir
from tests.integration.proxy.test_oracle_session import git_repo
from tests.integration.train.test_oracle_corpus import _oracle_session

pytestmark = pytest.mark.slow


async def test_oracle_corpus_to_a_checkpoint_the_server_and_grpo_load(reference_server: Any, tmp_path: Path,
                                                                      capsys: Any) -> None:
    result = await _oracle_session(reference_server, git_repo(tmp_path / "calc"))
    assert result.reward == 1.0
    with ShardWriter(RunDir(tmp_path / "run").shards, 0, ShardConfig(), {"test": "sft-checkpoint"}) as w:
        w.add(result)
    out = tmp_path / "sft-model"
    rc = main(["train", "sft", str(tmp_path / "run"), "--out", str(out), "--model", reference_server.model_dir,
               "--max-steps", "2", "--learning-rate", "1e-3"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "sft step 2/2" in cap.out
    summary = msgspec.json.decode((out / SUMMARY).read_bytes(), type=SftResult)
    assert summary.rows == 1 and len(summary.steps) == 2 and summary.trainable_tokens > 0

    model, tok = load_policy(out)
    assert type(model).__name__ == "Qwen3ForCausalLM" and tok.chat_template

    text = tok.apply_chat_template([{"role": "user", "content": "Fix add in calc.py"}], tokenize=False,
                                   add_generation_prompt=True)
    prompt = tok(text, add_special_tokens=False)["input_ids"]
    assert prompt
    with start_reference_server(out, seed=0, threads=1, log_path=tmp_path / "server.log") as server:
        body = {"input_ids": list(prompt), "sampling_params": {"max_new_tokens": 4, "temperature": 0.0},
                "return_logprob": True}
        async with aiohttp.ClientSession(trust_env=False) as http, \
                http.post(f"{server.url}/generate", json=body) as resp:
            assert resp.status == 200, await resp.text()
            got = await resp.json()
    assert len(got["meta_info"]["output_token_logprobs"]) == 4
