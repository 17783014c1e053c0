"""Truncated importance sampling (TIS) against polar-hpc's recorded rollout logprobs, in a small TRL subclass.

TRL 1.16 applies its own TIS only on its vLLM path. ``TisGRPOTrainer`` does the same with the logprobs our engines
recorded, through the hook TRL documents for subclasses (``_compute_loss`` accepts advantages of shape (B, T)):

    w = min(exp(logp_trainer - logp_rollout), clip)        per token (``level="token"``), or
    w = min(exp(sum_t (logp_trainer - logp_rollout)), clip)   per sequence (``level="sequence"``)
    advantage(b, t) = A(b) * w(b, t)                        (w detached)

Scaling the advantage by ``w >= 0`` equals TRL's ``per_token_loss * importance_sampling_ratio`` for every loss
type it offers here (each is linear in the advantage), and KL (``beta``) is not scaled, as in TRL.
``logp_trainer`` is one no-grad forward pass at the start of the step (TRL's ``old_per_token_logps``, also reused
as the PPO ratio's denominator, as on TRL's vLLM path). Per step it records the trainer-vs-rollout agreement over
trainable tokens (``polar_hpc.train.agreement``'s figures: mean and max |Δ logp|, share above 0.1 nat, KL) and
the share of ratios the clip truncated: ``last_tis``.

Rows with their own credit: when ``rollout_func`` returns ``advantage`` / ``session`` / ``group`` per row
(``batch.rollout_output``: one row per chain, a varying number per step), TRL's per-block group advantages do not
apply; the trainer hands TRL the rows as they are (TRL's own advantage then unused) and trains on
``A(session) * w(t)`` with ``w`` from ``trainer.loss_norm`` (``credit.token_weights``), times the TIS weight.
"""

from __future__ import annotations

from typing import Any

import msgspec
import torch
from trl import GRPOTrainer

from polar_hpc.config.run import LossNorm, TisLevel
from polar_hpc.train.agreement import AgreementStats, agreement_stats


class TisStats(msgspec.Struct, kw_only=True, frozen=True):
    agreement: AgreementStats
    """Trainer vs rollout logprobs over the trainable tokens, the figures of ``polar-hpc shards logprobs``."""
    clipped_share: float
    """Share of ratios (tokens or sequences, by level) above the clip."""
    ratio_mean: float

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


def tis_weights(trainer_logps: torch.Tensor, rollout_logps: torch.Tensor, mask: torch.Tensor, *, clip: float,
                level: TisLevel = "token") -> tuple[torch.Tensor, TisStats]:
    """Weights (B, T), 1 where ``mask`` is 0, and the step's statistics. Inputs (B, T); ``mask`` 1 = trainable."""
    m = mask.to(trainer_logps.dtype)
    diff = torch.nan_to_num((trainer_logps - rollout_logps) * m, nan=0.0)
    on = m > 0
    if level == "token":
        ratio = torch.exp(diff)
        counted = ratio[on]
    else:
        ratio = torch.exp(diff.sum(-1, keepdim=True)).expand_as(diff)
        counted = ratio[:, 0][on.any(-1)]
    w = torch.where(on, torch.clamp(ratio, max=clip), torch.ones_like(ratio)).detach()
    stats = TisStats(
        agreement=agreement_stats(trainer_logps, rollout_logps, mask),
        clipped_share=float((counted > clip).float().mean()) if counted.numel() else 0.0,
        ratio_mean=float(counted.mean()) if counted.numel() else 1.0,
    )
    return w, stats


class TisGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` with truncated importance sampling against the rollout logprobs ``rollout_func`` returned.

    Extra keyword arguments: ``tis_clip``, ``tis_level`` and ``loss_norm`` (``[trainer]`` of the recipe)."""

    def __init__(self, *args: Any, tis_clip: float, tis_level: TisLevel = "token", loss_norm: LossNorm = "token",
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tis_clip = tis_clip
        self.tis_level: TisLevel = tis_level
        self.loss_norm: LossNorm = loss_norm
        self.last_tis: TisStats | None = None

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        rollout_func = self.rollout_func
        rolled = rollout_func([x["prompt"] for x in inputs], self) if rollout_func is not None else None
        if rolled is None or "advantage" not in rolled:
            out = self._scored(inputs, rolled)
        else:  # our rows: as many as the step's chains, each with its session's advantage
            n = self.num_generations
            self.num_generations = 1  # TRL's block advantage (unused) over any row count
            try:
                out = self._scored([{"prompt": g} for g in rolled["group"]], rolled)
            finally:
                self.num_generations = n
            from polar_hpc.train.grpo.credit import token_weights

            mask = out["completion_mask"] if "tool_mask" not in out else out["completion_mask"] * out["tool_mask"]
            norm = token_weights(mask.cpu().numpy(), rolled["session"], rolled["group"], loss_norm=self.loss_norm,
                                 loss_type=self.loss_type)
            session_adv = torch.tensor(rolled["advantage"], dtype=torch.float32, device=mask.device)
            out["advantages"] = session_adv.unsqueeze(1) * torch.as_tensor(norm, dtype=torch.float32,
                                                                           device=mask.device)
        sampling = out.get("sampling_per_token_logps")
        if sampling is None:
            return out
        completion_ids, completion_mask = out["completion_ids"], out["completion_mask"]
        mask = completion_mask if "tool_mask" not in out else completion_mask * out["tool_mask"]
        old = out.get("old_per_token_logps")
        if old is None:
            with torch.no_grad():
                old, _, _ = self._get_per_token_logps_and_entropies(
                    self.model, torch.cat([out["prompt_ids"], completion_ids], dim=1),
                    torch.cat([out["prompt_mask"], completion_mask], dim=1), completion_ids.size(1),
                    batch_size=self.args.per_device_train_batch_size)
            out["old_per_token_logps"] = old
        w, stats = tis_weights(old, sampling, mask, clip=self.tis_clip, level=self.tis_level)
        adv = out["advantages"]
        out["advantages"] = (adv.unsqueeze(1) if adv.dim() == 1 else adv) * w
        self.last_tis = stats
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
