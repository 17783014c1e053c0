"""The fixture of record for the SFT corpus: an oracle run. The shell harness's own agent (``mini_agent``, official
``openai`` SDK) solves a real git repo through the proxy under the oracle policy (multi-turn, parallel tool calls,
every token forced and scored by the real reference server); the session is built, graded by the repo's tests and
written to a shard, exported, and TRL's SFTTrainer tokenizes the chat record back to exactly the ids the model
was scored on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from polar_hpc.config.run import ShardConfig
from polar_hpc.export.sft import export_sft
from polar_hpc.store.writer import ShardWriter
from polar_hpc.wire.rundir import RunDir
from tests.fixtures.oracle_repo import git_repo, oracle_session

pytestmark = pytest.mark.slow




async def test_oracle_run_exports_a_corpus_trl_reads_back_exactly(reference_server: Any, tmp_path: Path) -> None:
    import datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    result = await oracle_session(reference_server, git_repo(tmp_path / "calc"))
    assert result.reward == 1.0 and [t.policy for t in result.trajectory.traces] == ["oracle"]
    with ShardWriter(RunDir(tmp_path / "run").shards, 0, ShardConfig(), {"test": "oracle-corpus"}) as w:
        w.add(result)
    m = export_sft([tmp_path / "run"], tmp_path / "sft", fmt="parquet", test_fraction=0.0)
    assert m.splits == ["train"] and m.traces["train"] == 1
    chat = datasets.load_dataset(str(tmp_path / "sft"), "chat", cache_dir=str(tmp_path / "cache"))["train"]
    tokens = datasets.load_dataset(str(tmp_path / "sft"), "tokens", cache_dir=str(tmp_path / "cache"))["train"]
    row = chat[0]
    assert row["policy"] == "oracle" and tokens[0]["policy"] == "oracle"
    calls = [c for msg in row["messages"] for c in msg.get("tool_calls", [])]
    assert len(calls) >= 3 and all(isinstance(c["function"]["arguments"], dict) for c in calls)
    assert max(len(msg.get("tool_calls", [])) for msg in row["messages"]) == 2  # a parallel turn
    tok = AutoTokenizer.from_pretrained(reference_server.model_dir)
    args = SFTConfig(output_dir=str(tmp_path / "trl"), max_steps=1, report_to="none", save_strategy="no",
                     max_length=8192, use_cpu=True)
    trainer = SFTTrainer(model=AutoModelForCausalLM.from_pretrained(reference_server.model_dir), args=args,
                         train_dataset=chat, processing_class=tok)
    ids, sampled = trainer.train_dataset[0]["input_ids"], tokens[0]["input_ids"]
    # the oracle writes its final answer as Qwen3's template renders a last turn (an empty reasoning block first)
    empty_think = tok.encode("<think>\n\n</think>\n\n", add_special_tokens=False)
    last = len(ids) - 1 - ids[::-1].index(tok.convert_tokens_to_ids("<|im_start|>")) + 3  # after "assistant\n"
    assert ids[last:last + len(empty_think)] == empty_think
    assert ids[: len(sampled)] == sampled and tok.decode(ids[len(sampled):]) == "\n"
