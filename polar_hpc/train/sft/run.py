"""``polar-hpc train sft``'s body: TRL's ``SFTTrainer`` on the token-level export, saved as a plain model dir.

Callable from Python (``tools/bench``)::

    corpus = load_corpus([run_dir], work)              # or an export folder
    result = train_sft(corpus, out, SftConfig(epochs=2), model_dir, report=print_line)

The trainer sees each row as ``input_ids`` + ``assistant_masks`` (``data.to_dataset``); TRL turns the mask into
``labels`` (-100 where it is 0), and its loss is the mean next-token NLL over the step's unmasked labels (one row a
micro-batch, ``batch_rows`` micro-batches accumulated per optimizer step, normalized by the step's token count).
The saved dir (weights, config, generation config, the base model's tokenizer and chat template) is what the
reference server loads as ``inference.model`` and ``train grpo`` as ``trainer.model``; ``sft.json`` beside the
weights records the settings, the corpus and the per-step losses.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from polar_hpc.config.sft import SftConfig
from polar_hpc.log import get_logger
from polar_hpc.train.sft.data import SftCorpus, SftInputError, fit_length, to_dataset

log = get_logger("train")
SUMMARY = "sft.json"
"""The run's record in the output model dir."""
WORK_DIR = ".sft-work"
"""Scratch under the output dir (the corpus exported from runs, TRL's output_dir); removed after a good run."""


class SftStep(msgspec.Struct, kw_only=True):
    step: int
    steps: int
    loss: float
    learning_rate: float
    grad_norm: float
    tokens: int
    """Tokens forwarded so far (prompt and response, every row)."""
    elapsed_s: float
    eta_s: float
    token_accuracy: float = float("nan")


class SftResult(msgspec.Struct, kw_only=True):
    out: str
    base_model: str
    config: SftConfig
    rows: int
    tokens: int
    trainable_tokens: int
    trainable_params: int
    total_params: int
    steps: list[SftStep]
    train_s: float
    tokens_per_s: float
    """Forward+backward throughput: tokens forwarded / training wall time."""


def step_line(s: SftStep) -> str:
    return (f"sft step {s.step}/{s.steps}  loss {s.loss:.4f}  acc {s.token_accuracy:.3f}  lr {s.learning_rate:.2e}  "
            f"{s.tokens / max(s.elapsed_s, 1e-9):.0f} tok/s  elapsed {_hms(s.elapsed_s)}  eta {_hms(s.eta_s)}")


def _hms(s: float) -> str:
    m, sec = divmod(int(round(s)), 60)
    return f"{m // 60}h{m % 60:02d}m{sec:02d}s" if m >= 60 else f"{m}m{sec:02d}s"


def decoder_layers(model: Any, layers: int) -> Any:
    """The model's decoder layer list when ``layers`` of them can train; ``SftInputError`` otherwise."""
    blocks = getattr(model.get_decoder(), "layers", None)
    if blocks is None:
        raise SftInputError(f"sft.layers = {layers}: {type(model).__name__} has no decoder .layers to choose from; "
                            "use sft.layers = 0 (every parameter)")
    if layers > len(blocks):
        raise SftInputError(f"sft.layers = {layers}: the model has {len(blocks)} decoder layers")
    return blocks


def freeze_lower_layers(model: Any, layers: int) -> int:
    """Train only the last ``layers`` decoder layers and the final norm (0: everything); trainable param count.
    ``SftInputError`` when the model has fewer layers."""
    if layers == 0:
        for p in model.parameters():
            p.requires_grad_(True)
        return sum(p.numel() for p in model.parameters())
    blocks = decoder_layers(model, layers)
    norm = getattr(model.get_decoder(), "norm", None)
    for p in model.parameters():
        p.requires_grad_(False)
    for mod in [*blocks[len(blocks) - layers:], *([norm] if norm is not None else [])]:
        for p in mod.parameters():
            p.requires_grad_(True)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def sft_args(cfg: SftConfig, output_dir: Path) -> Any:
    import torch
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(output_dir), per_device_train_batch_size=1, gradient_accumulation_steps=cfg.batch_rows,
        num_train_epochs=cfg.epochs, max_steps=cfg.max_steps or -1, learning_rate=cfg.learning_rate,
        lr_scheduler_type=cfg.lr_scheduler, warmup_steps=cfg.warmup_steps, weight_decay=cfg.weight_decay,
        max_grad_norm=cfg.max_grad_norm, seed=cfg.seed, data_seed=cfg.seed, max_length=None, packing=False,
        padding_free=False, completion_only_loss=False, assistant_only_loss=False,
        activation_checkpointing=cfg.gradient_checkpointing, logging_steps=1, logging_first_step=True,
        save_strategy="no", report_to="none", disable_tqdm=True, bf16=False, fp16=False,
        use_cpu=not torch.cuda.is_available(), dataloader_pin_memory=False, dataloader_num_workers=0,
    )


def build_trainer(model: Any, tokenizer: Any, corpus: SftCorpus, cfg: SftConfig, work: Path) -> Any:
    """TRL's ``SFTTrainer`` over ``corpus`` (cut to ``cfg.max_length``) with ``cfg``'s trainable parameters."""
    from transformers import PrinterCallback
    from trl import SFTTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    corpus = fit_length(corpus, cfg.max_length)
    freeze_lower_layers(model, cfg.layers)
    trainer = SFTTrainer(model=model, args=sft_args(cfg, work / "trl"), train_dataset=to_dataset(corpus),
                         processing_class=tokenizer)
    trainer.remove_callback(PrinterCallback)
    return trainer


def train_sft(corpus: SftCorpus, out: Path, cfg: SftConfig, model_dir: Path, *,
              report: Callable[[SftStep], None] | None = None, model: Any = None, tokenizer: Any = None) -> SftResult:
    """Fine-tune ``model_dir`` (or the given ``model``/``tokenizer``, loaded from it) on ``corpus``; the model dir
    ``out`` (module doc). ``out`` must be new or empty (``SftInputError`` otherwise, before any work)."""
    import shutil

    import torch
    from transformers import TrainerCallback

    from polar_hpc.train.grpo.run import load_policy
    from polar_hpc.train.grpo.weights import save_checkpoint

    check_out(out)
    torch.set_num_threads(cfg.threads)
    if model is None or tokenizer is None:
        model, tokenizer = load_policy(model_dir, key="sft.model")
    work = out / WORK_DIR
    trainer = build_trainer(model, tokenizer, corpus, cfg, work)
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    steps: list[SftStep] = []
    t0 = time.monotonic()

    class Progress(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
            if not logs or "loss" not in logs:
                return
            step = int(state.global_step)
            elapsed = time.monotonic() - t0
            s = SftStep(step=step, steps=int(state.max_steps), loss=float(logs["loss"]),
                        learning_rate=float(logs.get("learning_rate", 0.0)),
                        grad_norm=float(logs.get("grad_norm", float("nan"))), tokens=int(logs.get("num_tokens", 0)),
                        elapsed_s=elapsed, eta_s=elapsed / max(step, 1) * (int(state.max_steps) - step),
                        token_accuracy=float(logs.get("mean_token_accuracy", float("nan"))))
            steps.append(s)
            log.debug("%s", step_line(s))
            if report is not None:
                report(s)

    trainer.add_callback(Progress())
    log.info("sft: %d rows, %d tokens (%d trainable), %d of %d params train, %s", len(corpus), corpus.tokens,
             corpus.trainable, trainable, total, cfg)
    trainer.train()
    train_s = time.monotonic() - t0
    model.eval()
    shutil.rmtree(work, ignore_errors=True)
    save_checkpoint(trainer.model, model_dir, out)
    forwarded = steps[-1].tokens if steps else 0
    result = SftResult(out=str(out), base_model=str(model_dir), config=cfg, rows=len(corpus), tokens=corpus.tokens,
                       trainable_tokens=corpus.trainable, trainable_params=trainable, total_params=total, steps=steps,
                       train_s=train_s, tokens_per_s=forwarded / train_s if train_s > 0 else 0.0)
    (out / SUMMARY).write_bytes(msgspec.json.format(msgspec.json.encode(result)))
    return result


def check_out(out: Path) -> None:
    """``out`` new or empty (the corpus exported from runs may already be in its work dir)."""
    if out.exists() and (not out.is_dir() or any(p.name != WORK_DIR for p in out.iterdir())):
        raise SftInputError(f"train sft: --out {out} exists and is not empty (expected a new or empty folder for "
                            "the model dir)")
