"""``train sft``'s data path on the real tiny Qwen3 and real TRL: shard rows -> token export -> the batches
``SFTTrainer`` trains on (labels only where the shard's own loss_mask is 1), one step's loss against a hand
computation, which parameters train, and the one-line refusals before any training."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from polar_hpc.cli.entry import main
from polar_hpc.config.sft import SftConfig
from polar_hpc.store.reader import ShardReader
from polar_hpc.train.sft.data import SftCorpus, SftInputError, fit_length, load_corpus
from polar_hpc.train.sft.run import SftStep, build_trainer, train_sft
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import TraceStatus
from tests.fixtures.runs import write_run

TRAINS = pytest.mark.slow
"""Builds TRL's trainer on the real tiny Qwen3 (importing TRL and torch, loading the model): the slow tier. The
refusals before any training stay in the fast one."""
LOSS_RTOL = 1e-5
"""fp32: TRL's chunked fused LM head vs one plain log_softmax over the same logits."""


def _results(factory: Any, n: int, reward: float = 1.0) -> list[SessionResult]:
    return [factory(status=TraceStatus.COMPLETED, reward=reward, traces=1 + i % 2, turns=2 + i % 2,
                    prompt_tokens=(16, 48), response_tokens=(4, 16), tool_tokens=(4, 16)) for i in range(n)]


@pytest.fixture
def run(tmp_path: Path, session_result_factory: Any) -> Path:
    accepted = _results(session_result_factory, 4)
    rejected = _results(session_result_factory, 2, reward=0.0)
    return write_run(tmp_path / "run", accepted + rejected)


def _shard_rows(run: Path) -> dict[tuple[int, ...], np.ndarray]:
    """input ids -> loss mask over them, straight from the shard (accepted sessions only)."""
    out = {}
    for t in ShardReader(run).traces():
        if t.session_reward >= 1.0:
            ids = np.concatenate([t.prompt_ids, t.response_ids]).astype(np.int64)
            out[tuple(ids.tolist())] = np.concatenate([np.zeros(len(t.prompt_ids), np.uint8), t.loss_mask])
    return out


def _model(tiny_qwen3_dir: Path) -> tuple[Any, Any]:
    from polar_hpc.train.grpo.run import load_policy

    return load_policy(tiny_qwen3_dir)


@TRAINS
def test_trainer_labels_are_the_shards_loss_mask(run: Path, tmp_path: Path, tiny_qwen3_dir: Path) -> None:
    corpus = load_corpus([run], tmp_path / "work")
    shard = _shard_rows(run)
    assert len(corpus) == len(shard) == 6  # 4 accepted sessions of 1 or 2 chains; the rejected ones left out
    model, tok = _model(tiny_qwen3_dir)
    trainer = build_trainer(model, tok, corpus, SftConfig(batch_rows=2), tmp_path / "trl")
    seen = 0
    for batch in trainer.get_train_dataloader():
        ids, labels = batch["input_ids"][0].numpy(), batch["labels"][0].numpy()
        assert batch["input_ids"].shape[0] == 1 and "attention_mask" in batch and bool(batch["attention_mask"].all())
        mask = shard[tuple(ids.tolist())]  # the exact ids the shard holds: nothing added, nothing re-templated
        np.testing.assert_array_equal(labels != -100, mask.astype(bool))
        np.testing.assert_array_equal(labels[mask == 1], ids[mask == 1])
        seen += 1
    assert seen == len(shard)


def _hand_loss(model: Any, corpus: SftCorpus) -> float:
    """Mean next-token NLL over every position whose loss_mask is 1, all rows together."""
    import torch

    nll, n = 0.0, 0
    with torch.no_grad():
        for ids, mask in zip(corpus.input_ids, corpus.loss_mask, strict=True):
            logits = model(input_ids=torch.from_numpy(ids)[None]).logits[0].double()
            logp = torch.log_softmax(logits[:-1], dim=-1)
            rows = np.flatnonzero(mask[1:]) if mask[0] == 0 else None
            assert rows is not None  # a row starts with its prompt
            nll -= float(logp[rows, ids[rows + 1]].sum())
            n += len(rows)
    return nll / n


@TRAINS
def test_one_step_loss_is_the_masked_next_token_loss(run: Path, tmp_path: Path, tiny_qwen3_dir: Path) -> None:
    corpus = load_corpus([run], tmp_path / "work")
    model, tok = _model(tiny_qwen3_dir)
    model.eval()
    expected = _hand_loss(model, corpus)
    steps: list[SftStep] = []
    cfg = SftConfig(batch_rows=len(corpus), max_steps=1, learning_rate=1e-3)
    r = train_sft(corpus, tmp_path / "out", cfg, tiny_qwen3_dir, report=steps.append, model=model, tokenizer=tok)
    assert [s.step for s in steps] == [1] and r.steps == steps
    assert steps[0].loss == pytest.approx(expected, rel=LOSS_RTOL)
    assert steps[0].tokens == corpus.tokens  # every token of every row forwarded once, no padding
    # the step changed the weights: the saved model scores the corpus differently
    from transformers import AutoModelForCausalLM

    trained = AutoModelForCausalLM.from_pretrained(tmp_path / "out")
    assert abs(_hand_loss(trained, corpus) - expected) > 1e-4


@TRAINS
def test_layers_trains_only_the_top_of_the_model(run: Path, tmp_path: Path, tiny_qwen3_dir: Path) -> None:
    import torch

    corpus = load_corpus([run], tmp_path / "work")
    model, tok = _model(tiny_qwen3_dir)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    n = len(model.get_decoder().layers)
    r = train_sft(corpus, tmp_path / "out", SftConfig(layers=1, max_steps=1, batch_rows=2, learning_rate=1e-2),
                  tiny_qwen3_dir, model=model, tokenizer=tok)
    assert 0 < r.trainable_params < r.total_params
    changed = {k for k, v in model.state_dict().items() if not torch.equal(v, before[k])}
    top = f"layers.{n - 1}."
    assert changed and all(top in k or k == "model.norm.weight" for k in changed), sorted(changed)
    assert any(top in k for k in changed)


def test_max_length_cuts_rows_and_drops_untrainable_ones() -> None:
    ids = [np.arange(10), np.arange(6)]
    masks = [np.array([0] * 8 + [1] * 2, np.uint8), np.array([0, 0, 1, 1, 0, 1], np.uint8)]
    c = fit_length(SftCorpus(ids, masks, "test"), 4)
    assert len(c) == 1 and c.input_ids[0].tolist() == [0, 1, 2, 3] and c.loss_mask[0].tolist() == [0, 0, 1, 1]
    with pytest.raises(SftInputError, match=r"sft.max_length = 2: no row keeps a trainable token \(the earliest one "
                                            r"is at position 2"):
        fit_length(SftCorpus(ids, masks, "test"), 2)


def _cli(capsys: Any, *argv: str | Path) -> tuple[int, str, str]:
    """``polar-hpc train sft ARGV`` as a fresh process would log: its handler writes to this test's stderr."""
    import logging

    logger = logging.getLogger("polar_hpc")
    kept = list(logger.handlers)
    for h in kept:
        logger.removeHandler(h)
    capsys.readouterr()  # what the test's own setup logged (writing the run's shards) is not the CLI's
    try:
        rc = main(["train", "sft", *map(str, argv)])
    finally:
        for h in list(logger.handlers):
            logger.removeHandler(h)
        for h in kept:
            logger.addHandler(h)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@TRAINS
def test_cli_trains_and_writes_a_model_dir(run: Path, tmp_path: Path, tiny_qwen3_dir: Path, capsys: Any) -> None:
    out = tmp_path / "model"
    rc, stdout, err = _cli(capsys, run, "--out", out, "--model", tiny_qwen3_dir, "--max-steps", "2",
                           "--batch-rows", "2", "--threads", "1")
    assert rc == 0, err
    assert "sft: 6 rows" in stdout and "sft step 1/2  loss" in stdout and "sft step 2/2" in stdout
    names = {p.name for p in out.iterdir()}
    assert {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
            "sft.json"} <= names and ".sft-work" not in names


@pytest.mark.parametrize("case", ["no-accepted", "model", "layers", "max-length", "out", "flag"])
def test_bad_input_is_one_line_before_training(case: str, tmp_path: Path, session_result_factory: Any,
                                               tiny_qwen3_dir: Path, capsys: Any) -> None:
    run = write_run(tmp_path / "run", _results(session_result_factory, 2, reward=1.0 if case != "no-accepted" else 0))
    out = tmp_path / "model"
    args: list[Any] = [run, "--out", out, "--model", tiny_qwen3_dir]
    expected = {
        "no-accepted": "train sft: no accepted session in",
        "model": "sft.model: cannot load a causal LM and tokenizer from",
        "layers": "sft.layers = 99: the model has",
        "max-length": "sft.max_length = 3: no row keeps a trainable token",
        "out": f"train sft: --out {out} exists and is not empty",
        "flag": "sft.epochs = -1",
    }[case]
    if case == "model":
        (tmp_path / "empty").mkdir()
        args[-1] = tmp_path / "empty"
    elif case == "layers":
        args += ["--layers", "99"]
    elif case == "max-length":
        args += ["--max-length", "3"]
    elif case == "out":
        out.mkdir()
        (out / "keep.txt").write_text("x")
    elif case == "flag":
        args += ["--epochs", "-1"]
    rc, _, err = _cli(capsys, *args)
    assert rc == 2 and expected in err, err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("polar-hpc: ") and "Traceback" not in err
    # the only line before it: the export of the runs' accepted sessions, where the corpus decides (max_length)
    exported = len(lines) == 2 and "exported 3 train / 0 test traces" in lines[0]
    assert len(lines) == 1 or (case == "max-length" and exported), lines
    assert not (out / "model.safetensors").exists()
