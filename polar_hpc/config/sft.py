"""``[sft]``: ``polar-hpc train sft``'s settings (its command-line flags are derived from these fields).

Defaults are measured for SmolLM2-135M-Instruct in float32 on a 2-core CPU (docs/train.md, "SFT costs").
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import Meta

from polar_hpc.config.base import StrictStruct

SftScheduler = Literal["constant", "linear", "cosine"]


class SftConfig(StrictStruct):
    """Supervised fine-tuning on the token-level SFT export: the exact ids the harness's requests rendered to, loss
    only where the export's ``loss_mask`` is 1 (tokens the policy produced; prompts, tool results and template tokens
    out). One row (a chain) per micro-batch, no padding; ``batch_rows`` rows per optimizer step."""

    model: str | None = None
    """The model to fine-tune (a dir or ``asset:NAME``); default: the recipe's ``inference.model``."""
    epochs: Annotated[float, Meta(gt=0)] = 2.0
    max_steps: Annotated[int, Meta(ge=0)] = 0
    """Stop after this many optimizer steps (0: ``epochs`` decides)."""
    learning_rate: Annotated[float, Meta(gt=0)] = 1e-4
    lr_scheduler: SftScheduler = "cosine"
    warmup_steps: Annotated[int, Meta(ge=0)] = 0
    weight_decay: Annotated[float, Meta(ge=0)] = 0.0
    max_grad_norm: Annotated[float, Meta(gt=0)] = 1.0
    batch_rows: Annotated[int, Meta(ge=1)] = 8
    """Rows (chains) per optimizer step; the loss is the mean over the step's trainable tokens."""
    max_length: Annotated[int, Meta(ge=2)] | None = None
    """Rows longer than this are cut to their first ``max_length`` tokens (the cut tokens do not train);
    None: no cut."""
    layers: Annotated[int, Meta(ge=0)] = 0
    """Train only the last N decoder layers and the final norm (embeddings and LM head frozen); 0: every
    parameter. SmolLM2-135M: 8 of its 30 layers run 1.45x (idle) to 3.5x (loaded CPU) faster than 0,
    but learn less a step (docs/train.md); the default stays 0 so
    that any model, however few its layers, trains as given."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass: less memory, about a third more compute."""
    threads: Annotated[int, Meta(ge=1)] = 1
    """torch threads (with OMP_WAIT_POLICY=PASSIVE, as the GRPO trainer)."""
    seed: int = 0
    min_reward: float | None = None
    """Sessions read from run or shard dirs are kept when they completed with at least this reward (default: the
    run's acceptance threshold, ``config.run.ACCEPT_REWARD``); an existing export is taken as it is."""
