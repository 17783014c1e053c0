"""The exported chat corpus goes into TRL as it is: real ``trl.SFTTrainer`` tokenizes it through its own data path
(Qwen3 with the real tokenizer asset; Llama-3.1's template, as TRL ships it, on the SmolLM2 tokenizer), and
``tokenizer.apply_chat_template(messages, tools=tools)`` renders every row. The corpus is recorded from real SDK
traffic (``tests.fixtures.sdk_runs``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from polar_hpc.export.manifest import ExportManifest
from polar_hpc.export.sft import export_sft

pytestmark = pytest.mark.slow


def _export(run: Path, out: Path, fmt: str) -> ExportManifest:
    return export_sft([run], out, fmt=fmt, test_fraction=0.2)  # type: ignore[arg-type]


def _train_split(out: Path, fmt: str) -> Any:
    import datasets

    if fmt == "hf":
        return datasets.load_from_disk(str(out / "chat"))["train"]
    return datasets.load_dataset(str(out), "chat", cache_dir=str(out / ".cache"))["train"]


def _trainer(model: Any, tok: Any, ds: Any, tmp: Path, **cfg: Any) -> Any:
    from trl import SFTConfig, SFTTrainer

    args = SFTConfig(output_dir=str(tmp / "trl"), max_steps=1, per_device_train_batch_size=2, report_to="none",
                     save_strategy="no", logging_strategy="no", max_length=2048, use_cpu=True, **cfg)
    return SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok)


async def test_trl_qwen3_tokenizes_what_the_policy_saw(sdk_run: Path, tmp_path: Path, tiny_qwen3_dir: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out, fmt = tmp_path / "out", "parquet"
    m = _export(sdk_run, out, fmt)
    ds = _train_split(out, fmt)
    tok = AutoTokenizer.from_pretrained(tiny_qwen3_dir)
    trainer = _trainer(AutoModelForCausalLM.from_pretrained(tiny_qwen3_dir), tok, ds, tmp_path)
    tokens = {(r["key"], r["trace_index"]): r["input_ids"]
              for f in m.files["tokens"]["train"] for r in _jsonl_or_parquet(out / f)}
    assert trainer.train_dataset.num_rows == m.traces["train"] == len(tokens)
    for row, src in zip(trainer.train_dataset, ds, strict=True):
        ids = row["input_ids"]
        text = tok.decode(ids)
        assert '<tool_call>\n{"name": "edit", "arguments": {"path": "add.py", "old": "a - b", "new": "a + b"}}' in text
        assert "<think>\nadd() subtracts; fix it.\n</think>" in text and "null" not in text
        sampled = tokens[src["key"], src["trace_index"]]
        # the template re-renders exactly the ids the policy saw and sampled (plus the newline after the last turn)
        assert ids[: len(sampled)] == sampled and tok.decode(ids[len(sampled):]) == "\n"


async def test_trl_llama31_template_on_smollm2(sdk_run: Path, tmp_path: Path, smollm2_dir: Path) -> None:
    import torch
    import trl
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    out = tmp_path / "out"
    _export(sdk_run, out, "parquet")
    ds = _train_split(out, "parquet")
    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    template = Path(trl.__file__).parent / "chat_templates" / "llama3_1.jinja"
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1))
    trainer = _trainer(model, tok, ds, tmp_path, chat_template_path=str(template))
    text = tok.decode(trainer.train_dataset[0]["input_ids"])
    assert '{"name": "bash", "parameters": {"command": "ls"}}' in text  # arguments as an object, encoded once
    # tool results go into ipython turns (this template JSON-encodes string contents)
    assert '<|start_header_id|>ipython<|end_header_id|>\n\n"add.py\\ntest_add.py"<|eot_id|>' in text
    assert '"name": "edit"' in text and "Fixed add.py" in text and "None" not in text
    trainer.train()  # one optimizer step on a 1-layer Llama
    assert trainer.state.global_step == 1


async def test_apply_chat_template_renders_every_row(sdk_run: Path, tmp_path: Path, tiny_qwen3_dir: Path) -> None:
    from transformers import AutoTokenizer

    out = tmp_path / "out"
    _export(sdk_run, out, "jsonl")
    ds = _train_split(out, "jsonl")
    tok = AutoTokenizer.from_pretrained(tiny_qwen3_dir)
    for row in ds:
        text = tok.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
        assert '"name": "bash", "description": "Run a shell command"' in text and "<tools>" in text


def _jsonl_or_parquet(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines()]
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return rows
