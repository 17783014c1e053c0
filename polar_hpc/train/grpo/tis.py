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
as the PPO ratio's denominator, as on TRL's vLLM path). With ``trainer.micro_batch_tokens > 0`` the loss runs in
micro-batches of the rows that train (``micro``) and ``logp_trainer`` is each micro-batch's own loss forward,
detached (one iteration a step: the same weights; no pass of its own), or with ``tis_mask`` (which needs the whole
step's ratios before any loss) a no-grad pass in the same micro-batches. Per step it records the trainer-vs-rollout
agreement over trainable tokens, with micro-batches those of the rows that train (``polar_hpc.train.agreement``'s
figures: mean and max |Δ logp|, share above 0.1 nat, KL), the shares of ratios the clip truncated and the band
masked, and the step's |Δ logp| by harness, weight-version lag and turn (``mismatch``): ``last_tis``.

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
from polar_hpc.train.grpo.micro import even, loss_weights, plan, row_spans, splittable, take, trained_rows
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


ROW_INDEX = "polar_row"
"""Batch key: each row's index in the step as generated (TRL shuffles the rows before the loss)."""
SCORED = "polar_scored"
"""Batch key: (B, T) the tokens the correction's figures cover (the trainable tokens of the rows that train)."""


class Pending(NamedTuple):
    """A step whose TIS weights come from the loss's own forward (micro-batches, no band): what the figures need."""

    sampling: torch.Tensor
    scored: torch.Tensor
    rolled: dict[str, Any] | None
    logps: torch.Tensor
    """(B, T) in generation order: the trainer's logprobs as the micro-batches compute them (the rollout's
    elsewhere)."""


class TisGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` with truncated importance sampling against the rollout logprobs ``rollout_func`` returned.

    Extra keyword arguments: ``tis_clip``, ``tis_level``, ``tis_mask``, ``loss_norm`` and ``micro_batch_tokens``
    (``[trainer]`` of the recipe; ``micro_batch_tokens = 0``: TRL's one padded batch)."""

    def __init__(self, *args: Any, tis_clip: float, tis_level: TisLevel = "token", loss_norm: LossNorm = "token",
                 tis_mask: float = 0.0, micro_batch_tokens: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.micro_batch_tokens = micro_batch_tokens
        self.tis_clip = tis_clip
        self.tis_mask = tis_mask
        self.tis_level: TisLevel = tis_level
        self.loss_norm: LossNorm = loss_norm
        self.last_tis: TisStats | None = None
        self._pending: Pending | None = None
        self._tis_part: dict[str, Any] | None = None
        """The micro-batch whose loss forward is running, when its TIS weights come from that forward."""
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
            scored = mask  # the tokens the correction's figures cover
            if old is None and self.micro_batch_tokens:  # only the rows that train; the others' ratio is 1
                advantage = torch.tensor(rolled["advantage"]) if rows and rolled is not None else out["advantages"]
                trained = trained_rows(advantage, mask, self.beta)
                scored = mask * torch.isin(torch.arange(mask.size(0)), torch.tensor(trained)).unsqueeze(1).to(mask)
                if self.tis_mask == 0 and splittable(self, out):  # the weights from the loss's forward (_tis_part)
                    out[ROW_INDEX], out[SCORED] = torch.arange(mask.size(0)), scored
                    self._pending = Pending(sampling=sampling, scored=scored, rolled=rolled,
                                            logps=torch.nan_to_num(sampling.detach().clone()))
                else:
                    old = out["old_per_token_logps"] = self._micro_logps(out, trained, sampling)
            elif old is None:
                with torch.no_grad():
                    old, _, _ = self._get_per_token_logps_and_entropies(
                        self.model, torch.cat([out["prompt_ids"], completion_ids], dim=1),
                        torch.cat([out["prompt_mask"], completion_mask], dim=1), completion_ids.size(1),
                        batch_size=self.args.per_device_train_batch_size)
                out["old_per_token_logps"] = old
            if old is not None:
                c = tis_correction(old, sampling, scored, clip=self.tis_clip, level=self.tis_level,
                                   band=self.tis_mask)
                split_ = step_mismatch(rolled, old - sampling, scored, c, int(self.state.global_step)) \
                    if rolled else None
                self.last_tis = msgspec.structs.replace(c.stats, mismatch=split_)
            if c is not None and self.tis_mask > 0:  # masked tokens leave the loss and its normalizer (slime #657)
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

    def _micro_logps(self, out: dict[str, Any], rows: list[int], sampling: torch.Tensor) -> torch.Tensor:
        """The policy's logprobs of ``rows``' completion tokens, a micro-batch at a time, without gradient; the
        other rows keep the rollout's (a ratio of 1)."""
        logps = torch.nan_to_num(sampling.detach().clone())
        prompt, completion = row_spans(out["prompt_mask"], out["completion_mask"])
        with torch.no_grad():
            for part in plan(rows, prompt, completion, budget=self.micro_batch_tokens,
                             prompt_width=out["prompt_ids"].size(1)):
                x = take(out, part)
                got, _, _ = self._get_per_token_logps_and_entropies(
                    self.model, torch.cat([x["prompt_ids"], x["completion_ids"]], dim=1),
                    torch.cat([x["prompt_mask"], x["completion_mask"]], dim=1), part.completion_to)
                logps[torch.tensor(part.rows), :part.completion_to] = got.to(logps.dtype)
        return logps

    def _compute_loss(self, model: Any, inputs: dict[str, Any]) -> torch.Tensor:
        """TRL's loss; with ``micro_batch_tokens`` the rows that train, a micro-batch at a time (``micro.plan``):
        every part but the last is back-propagated here (without a gradient sync across processes), the last is
        returned with the others' values added, for the trainer to back-propagate. With several processes every
        row, in parts of as many rows on every process (``micro.even``)."""
        if not (self.micro_batch_tokens and splittable(self, inputs)):
            return super()._compute_loss(model, inputs)  # type: ignore[no-any-return]
        backward = model.training and torch.is_grad_enabled()
        mask = inputs["completion_mask"] * inputs.get("tool_mask", 1)
        prompt, completion = row_spans(inputs["prompt_mask"], inputs["completion_mask"])
        width = inputs["prompt_ids"].size(1)
        if self.accelerator.num_processes > 1:  # every process the same parts: all its rows, as many a part
            longest = max(p + c for p, c in zip(prompt, completion, strict=True))
            fits = torch.tensor([max(1, self.micro_batch_tokens // max(1, longest))], device=mask.device)
            parts = even(len(prompt), prompt, completion, per_part=int(self.accelerator.gather(fits).min()),
                         prompt_width=width)
            weights = loss_weights(self.loss_type, parts, mask)
        else:
            rows = trained_rows(inputs["advantages"], mask, self.beta)
            shortest = [min(range(len(prompt)), key=lambda i: prompt[i] + completion[i])]  # a weight-0 part
            parts = plan(rows or shortest, prompt, completion, budget=self.micro_batch_tokens, prompt_width=width)
            weights = loss_weights(self.loss_type, parts, mask) if rows else [0.0]
        done = torch.zeros((), device=mask.device)
        for part, w in zip(parts[:-1], weights[:-1], strict=True):
            with self.accelerator.no_sync(model):
                loss = self._part_loss(model, take(inputs, part)) * w
                if backward:
                    self.accelerator.backward(loss)
            done = done + loss.detach()
        last: torch.Tensor = self._part_loss(model, take(inputs, parts[-1])) * weights[-1]
        self._finish_pending()
        return last + done

    def _part_loss(self, model: Any, part: dict[str, Any]) -> torch.Tensor:
        self._tis_part = part if self._pending is not None else None
        try:
            loss: torch.Tensor = super()._compute_loss(model, part)
        finally:
            self._tis_part = None
        return loss

    def _get_per_token_logps_and_entropies(self, model: Any, input_ids: Any, attention_mask: Any,
                                           logits_to_keep: int, *args: Any, **kwargs: Any) -> Any:
        """TRL's; during a micro-batch's loss forward with its TIS weights pending, the weights from the forward's
        own (detached) logprobs multiply the micro-batch's advantages, which TRL reads after this returns: the
        same weights as a separate no-grad pass before the step (num_iterations = 1: the same weights)."""
        got = super()._get_per_token_logps_and_entropies(model, input_ids, attention_mask, logits_to_keep, *args,
                                                         **kwargs)
        part, pending = self._tis_part, self._pending
        if part is not None and pending is not None:
            self._tis_part = None
            logps = got[0].detach()
            c = tis_correction(logps, part["sampling_per_token_logps"], part[SCORED], clip=self.tis_clip,
                               level=self.tis_level)
            adv = part["advantages"]
            part["advantages"] = (adv.unsqueeze(1) if adv.dim() == 1 else adv) * c.weights
            pending.logps[part[ROW_INDEX], :logps.size(1)] = logps.to(pending.logps.dtype)
        return got

    def _finish_pending(self) -> None:
        """The step's correction figures (``last_tis``) once every micro-batch's forward has run."""
        p, self._pending = self._pending, None
        if p is None:
            return
        c = tis_correction(p.logps, p.sampling, p.scored, clip=self.tis_clip, level=self.tis_level)
        split_ = step_mismatch(p.rolled, p.logps - p.sampling, p.scored, c, int(self.state.global_step)) \
            if p.rolled else None
        self.last_tis = msgspec.structs.replace(c.stats, mismatch=split_)

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
