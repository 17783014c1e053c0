"""Truncated importance sampling (TIS) against polar-hpc's recorded rollout logprobs, in a small TRL subclass.

TRL 1.16 applies its own TIS only on its vLLM path. ``TisGRPOTrainer`` does the same with the logprobs our engines
recorded, through the hook TRL documents for subclasses (``_compute_loss`` accepts advantages of shape (B, T)):

    w = min(exp(logp_trainer - logp_rollout), clip)        per token (``level="token"``), or
    w = min(exp(sum_t (logp_trainer - logp_rollout)), clip)   per sequence (``level="sequence"``)
    advantage(b, t) = A(b) * w(b, t)                        (w detached)

With ``tis_mask = c > 0`` (IcePop, Ring-1T; slime, verl, OpenRLHF): a ratio (token or sequence, by level) outside
``[1/c, c]`` gives weight 0 instead, and its tokens leave the loss mask (TRL's ``tool_mask``), so they do not count
in a token-sum loss's normalizer either (slime PR #657's fix).

Scaling the advantage by ``w >= 0`` equals TRL's ``per_token_loss * importance_sampling_ratio`` for every loss
type it offers here (each is linear in the advantage), and KL (``beta``) is not scaled, as in TRL.
``logp_trainer`` is one no-grad forward pass at the start of the step (TRL's ``old_per_token_logps``, also reused
as the PPO ratio's denominator, as on TRL's vLLM path). Per step it records the trainer-vs-rollout agreement over
trainable tokens (``polar_hpc.train.agreement``'s figures: mean and max |Δ logp|, share above 0.1 nat, KL) and
the shares of ratios the clip truncated and the band masked, and the step's |Δ logp| by harness, weight-version
lag and turn (``mismatch``): ``last_tis``.

Rows with their own credit: when ``rollout_func`` returns ``advantage`` / ``session`` / ``group`` per row
(``batch.rollout_output``: one row per chain, a varying number per step), TRL's per-block group advantages do not
apply; the trainer hands TRL the rows as they are (TRL's own advantage then unused) and trains on
``A(session) * w(t)`` with ``w`` from ``trainer.loss_norm`` (``credit.token_weights``, over the tokens the
``tis_mask`` band kept), times the TIS weight.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec
import numpy as np
import torch
from trl import GRPOTrainer

from polar_hpc.config.run import LossNorm, TisLevel
from polar_hpc.train.agreement import AgreementStats, agreement_stats
from polar_hpc.train.grpo.mismatch import Mismatch, split


class TisStats(msgspec.Struct, kw_only=True, frozen=True):
    agreement: AgreementStats
    """Trainer vs rollout logprobs over the trainable tokens, the figures of ``polar-hpc shards logprobs``."""
    clipped_share: float
    """Share of ratios (tokens or sequences, by level) above the clip (masked ones not counted)."""
    ratio_mean: float
    masked_share: float = 0.0
    """Share of ratios (tokens or sequences) outside the ``tis_mask`` band: weight 0 (0 when masking is off)."""
    mismatch: Mismatch | None = None
    """|Δ logp| by harness, weight-version lag and turn (``mismatch.split``; None: rows without that data)."""

    @property
    def logp_diff_mean(self) -> float:
        """Mean |logp_trainer - logp_rollout| over trainable tokens (nat)."""
        return self.agreement.mean_abs

    @property
    def logp_diff_max(self) -> float:
        return self.agreement.max_abs

    @property
    def tokens(self) -> int:
        return self.agreement.tokens


class Correction(NamedTuple):
    weights: torch.Tensor
    """(B, T): the ratio capped at the clip; 0 where masked; 1 where the mask is 0."""
    masked: torch.Tensor
    """(B, T) bool: trainable tokens outside the band (their whole row at the sequence level)."""
    clipped: torch.Tensor
    """(B, T) bool: trainable tokens whose ratio the clip truncated (not masked)."""
    stats: TisStats


def tis_correction(trainer_logps: torch.Tensor, rollout_logps: torch.Tensor, mask: torch.Tensor, *, clip: float,
                   level: TisLevel = "token", band: float = 0.0) -> Correction:
    """The correction of one step (module docstring). Inputs (B, T); ``mask`` 1 = trainable; ``band`` = c > 1 masks
    ratios outside [1/c, c] (0: off)."""
    m = mask.to(trainer_logps.dtype)
    diff = torch.nan_to_num((trainer_logps - rollout_logps) * m, nan=0.0)
    on = m > 0
    if level == "token":
        ratio = torch.exp(diff)
        counted_on = on
    else:
        ratio = torch.exp(diff.sum(-1, keepdim=True)).expand_as(diff)
        counted_on = on & (torch.cumsum(on.int(), -1) == 1)  # one position a row stands for its sequence
    outside = (ratio < 1.0 / band) | (ratio > band) if band > 0 else torch.zeros_like(on)
    masked = on & outside
    clipped = on & ~masked & (ratio > clip)
    w = torch.where(on, torch.clamp(ratio, max=clip), torch.ones_like(ratio))
    w = torch.where(masked, torch.zeros_like(w), w).detach()
    n = int(counted_on.sum())
    stats = TisStats(
        agreement=agreement_stats(trainer_logps, rollout_logps, mask),
        clipped_share=float(clipped[counted_on].float().mean()) if n else 0.0,
        masked_share=float(masked[counted_on].float().mean()) if n else 0.0,
        ratio_mean=float(ratio[counted_on].mean()) if n else 1.0,
    )
    return Correction(w, masked, clipped, stats)


def tis_weights(trainer_logps: torch.Tensor, rollout_logps: torch.Tensor, mask: torch.Tensor, *, clip: float,
                level: TisLevel = "token", band: float = 0.0) -> tuple[torch.Tensor, TisStats]:
    """Weights (B, T), 1 where ``mask`` is 0, and the step's statistics (``tis_correction``)."""
    c = tis_correction(trainer_logps, rollout_logps, mask, clip=clip, level=level, band=band)
    return c.weights, c.stats


def padded(rows: list[list[int]], width: int) -> np.ndarray:
    """Per-token row values (B, ``width``), -1 past each row's end (TRL pads completions on the right)."""
    out = np.full((len(rows), width), -1, dtype=np.int64)
    for i, r in enumerate(rows):
        n = min(len(r), width)
        out[i, :n] = r[:n]
    return out


def step_mismatch(rolled: dict[str, Any], delta: torch.Tensor, mask: torch.Tensor, correction: Correction,
                  trainer_version: int) -> Mismatch | None:
    """``mismatch.split`` of a step's rows (None: rows without harness, versions and turns)."""
    if not all(k in rolled for k in ("harness", "versions", "turns")):
        return None
    width = delta.shape[1]
    return split(delta.detach().float().cpu().numpy(), mask.cpu().numpy(), harness=rolled["harness"],
                 versions=padded(rolled["versions"], width), turns=padded(rolled["turns"], width),
                 trainer_version=trainer_version, masked=correction.masked.cpu().numpy(),
                 clipped=correction.clipped.cpu().numpy())


class TisGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` with truncated importance sampling against the rollout logprobs ``rollout_func`` returned.

    Extra keyword arguments: ``tis_clip``, ``tis_level`` and ``loss_norm`` (``[trainer]`` of the recipe)."""

    def __init__(self, *args: Any, tis_clip: float, tis_level: TisLevel = "token", loss_norm: LossNorm = "token",
                 tis_mask: float = 0.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tis_clip = tis_clip
        self.tis_mask = tis_mask
        self.tis_level: TisLevel = tis_level
        self.loss_norm: LossNorm = loss_norm
        self.last_tis: TisStats | None = None
        self.signal = True
        """Whether the last generated batch has a token with a nonzero advantage (``training_step``)."""

    def training_step(self, model: Any, inputs: Any, num_items_in_batch: Any = None) -> torch.Tensor:
        """TRL's step; where no row of the step (on any process) carries an advantage, the gradients are dropped
        so the optimizer leaves the weights alone: AdamW with a zero gradient still moves every weight by its
        momentum (measured: a step whose rows were all placeholders changed 118 M of 135 M weights by ~lr)."""
        loss: torch.Tensor = super().training_step(model, inputs, num_items_in_batch)
        if self.args.gradient_accumulation_steps == 1:
            flag = torch.tensor([float(self.signal)], device=self.accelerator.device)
            if float(self.accelerator.gather(flag).sum()) == 0.0:  # every process decides the same
                for param in model.parameters():
                    param.grad = None
        return loss

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        rollout_func = self.rollout_func
        rolled = rollout_func([x["prompt"] for x in inputs], self) if rollout_func is not None else None
        rows = rolled is not None and "advantage" in rolled
        if not rows or rolled is None:
            out = self._scored(inputs, rolled)
        else:  # our rows: as many as the step's chains, each with its session's advantage
            n = self.num_generations
            self.num_generations = 1  # TRL's block advantage (unused) over any row count
            try:
                out = self._scored([{"prompt": g} for g in rolled["group"]], rolled)
            finally:
                self.num_generations = n
        completion_ids, completion_mask = out["completion_ids"], out["completion_mask"]
        mask = completion_mask if "tool_mask" not in out else completion_mask * out["tool_mask"]
        sampling = out.get("sampling_per_token_logps")
        c: Correction | None = None
        if sampling is not None:
            old = out.get("old_per_token_logps")
            if old is None:
                with torch.no_grad():
                    old, _, _ = self._get_per_token_logps_and_entropies(
                        self.model, torch.cat([out["prompt_ids"], completion_ids], dim=1),
                        torch.cat([out["prompt_mask"], completion_mask], dim=1), completion_ids.size(1),
                        batch_size=self.args.per_device_train_batch_size)
                out["old_per_token_logps"] = old
            c = tis_correction(old, sampling, mask, clip=self.tis_clip, level=self.tis_level, band=self.tis_mask)
            split_ = step_mismatch(rolled, old - sampling, mask, c, int(self.state.global_step)) if rolled else None
            self.last_tis = msgspec.structs.replace(c.stats, mismatch=split_)
            if self.tis_mask > 0:  # masked tokens leave the loss and its normalizer (slime PR #657's point)
                keep = (~c.masked).to(completion_mask.dtype)
                out["tool_mask"] = keep if "tool_mask" not in out else out["tool_mask"] * keep
                mask = mask * keep
                if "num_items_in_batch" in out:  # dapo's normalizer: the step's loss tokens over every process
                    gone = self.accelerator.gather(c.masked.sum().reshape(1)).sum()  # every rank takes this branch
                    out["num_items_in_batch"] = out["num_items_in_batch"] - gone.to(out["num_items_in_batch"].dtype)
        if rows and rolled is not None:  # the session's advantage, weighed by loss_norm over the tokens that train
            from polar_hpc.train.grpo.credit import token_weights

            norm = token_weights(mask.cpu().numpy(), rolled["session"], rolled["group"], loss_norm=self.loss_norm,
                                 loss_type=self.loss_type)
            session_adv = torch.tensor(rolled["advantage"], dtype=torch.float32, device=mask.device)
            out["advantages"] = session_adv.unsqueeze(1) * torch.as_tensor(norm, dtype=torch.float32,
                                                                           device=mask.device)
        if c is not None:
            adv = out["advantages"]
            out["advantages"] = (adv.unsqueeze(1) if adv.dim() == 1 else adv) * c.weights
        self.signal = bool((out["advantages"] != 0).any())
        return out

    def _scored(self, inputs: list[dict[str, Any]], rolled: dict[str, Any] | None) -> dict[str, Any]:
        """TRL's scoring of ``inputs`` with the rollout already made (``rolled``)."""
        if rolled is None:
            return super()._generate_and_score_completions(inputs)
        own = self.rollout_func
        self.rollout_func = lambda _prompts, _trainer: rolled
        try:
            return super()._generate_and_score_completions(inputs)
        finally:
            self.rollout_func = own
