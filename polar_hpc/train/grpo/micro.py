"""A GRPO step's rows in micro-batches of similar length, each cut to its own longest row.

TRL computes a step's loss in one forward over every row, padded to the step's longest (and ``TisGRPOTrainer``'s
no-grad pass for the TIS logprobs did the same). A step's rows are whole chains: a ~680-token prompt, then 300 to
2,500 completion tokens; one padded batch held 1.5 to 2.4 times the real tokens on the bench's runs, and every
row's activations at once (``tools/bench/bench_grpo_step.py`` compares the two). Here the rows that train are sorted
by length and packed into micro-batches of at most ``trainer.micro_batch_tokens`` padded tokens (a longer row is
a micro-batch of its own); each is cut to its own width and its loss back-propagated before the next is built.

A row with no advantage on any token (its group's sessions all scored the same; a placeholder) adds nothing to the
gradient when ``beta = 0`` and is not computed. With several trainer processes (``ranks``) TRL's loss gathers
per-row figures across them once a call, so every process runs all its rows (as many on each) in parts of the
same number of rows (``even``). The micro-batches' losses, each scaled by its share of the step's
normaliser (``loss_weights``), sum to the one-batch loss: ``dapo`` already divides by the step's token count
(weight 1), ``bnpo`` by the batch's trainable tokens (weight: the micro-batch's share of them), ``grpo`` and
``dr_grpo`` average over rows (the share of rows). Cutting a row's left padding shifts its positions by a
constant, which rotary position embeddings do not see: the same loss and gradient within float error
(``tests/unit/train/test_grpo_micro.py``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

PROMPT_KEYS = ("prompt_ids", "prompt_mask")
"""TRL's left-padded prompt columns; every other (rows, width) tensor of a step is per completion token."""
ROW_MEAN = ("grpo", "dr_grpo")
"""Loss types that average over the batch's rows (a micro-batch weighs its share of rows)."""
SPLITTABLE = ROW_MEAN + ("dapo", "bnpo")


class Part(NamedTuple):
    rows: list[int]
    """Row indices into the step's batch."""
    prompt_from: int
    """First prompt column any of the rows uses."""
    completion_to: int
    """One past the last completion column any of the rows uses."""


def row_spans(prompt_mask: torch.Tensor, completion_mask: torch.Tensor) -> tuple[list[int], list[int]]:
    """Each row's prompt length (from its first unpadded column) and completion length (to its last)."""
    tp, tc = prompt_mask.size(1), completion_mask.size(1)
    prompt = torch.where(prompt_mask.any(1), tp - prompt_mask.int().argmax(1), 0)
    completion = torch.where(completion_mask.any(1), tc - completion_mask.int().flip(1).argmax(1), 0)
    return prompt.tolist(), completion.tolist()


def plan(rows: list[int], prompt_len: list[int], completion_len: list[int], *, budget: int,
         prompt_width: int) -> list[Part]:
    """``rows`` packed longest first into parts whose padded size (rows x (widest prompt + widest completion)) is
    at most ``budget`` tokens; a row longer than ``budget`` is a part of its own. Prompts are left-padded to
    ``prompt_width`` columns."""
    groups: list[list[int]] = []
    wp = wc = 0
    for i in sorted(rows, key=lambda i: prompt_len[i] + completion_len[i], reverse=True):
        p, c = max(wp, prompt_len[i]), max(wc, completion_len[i])
        if not groups or (len(groups[-1]) + 1) * (p + c) > budget:
            groups.append([])
            p, c = prompt_len[i], completion_len[i]
        groups[-1].append(i)
        wp, wc = p, c
    return [part(g, prompt_len, completion_len, prompt_width) for g in groups]


def even(n_rows: int, prompt_len: list[int], completion_len: list[int], *, per_part: int,
         prompt_width: int) -> list[Part]:
    """All ``n_rows`` rows, longest first, ``per_part`` a part: with several trainer processes every one must run
    as many parts of as many rows (TRL's loss gathers per-row figures across processes once a call)."""
    order = sorted(range(n_rows), key=lambda i: prompt_len[i] + completion_len[i], reverse=True)
    return [part(order[k:k + per_part], prompt_len, completion_len, prompt_width)
            for k in range(0, n_rows, per_part)]


def part(rows: list[int], prompt_len: list[int], completion_len: list[int], prompt_width: int) -> Part:
    return Part(rows, prompt_width - max(prompt_len[i] for i in rows), max(1, max(completion_len[i] for i in rows)))


def take(inputs: dict[str, Any], part: Part) -> dict[str, Any]:
    """The step's tensors for ``part``'s rows, cut to its columns (scalars such as ``num_items_in_batch`` kept)."""
    n = inputs["prompt_ids"].size(0)
    tc = inputs["completion_ids"].size(1)
    index = torch.tensor(part.rows, dtype=torch.long)
    out: dict[str, Any] = {}
    for key, value in inputs.items():
        if not isinstance(value, torch.Tensor) or value.dim() == 0 or value.size(0) != n:
            out[key] = value
            continue
        v = value.index_select(0, index.to(value.device))
        if key in PROMPT_KEYS:
            v = v[:, part.prompt_from:]
        elif v.dim() == 2 and v.size(1) == tc:
            v = v[:, :part.completion_to]
        out[key] = v
    return out


def trained_rows(advantages: torch.Tensor, mask: torch.Tensor, beta: float) -> list[int]:
    """The rows a step's gradient depends on: with ``beta = 0`` those with a nonzero advantage on a token of
    ``mask``; otherwise (the KL term trains every token) every row with a token in ``mask``."""
    on = mask > 0
    if beta == 0:
        adv = advantages if advantages.dim() == 2 else advantages.unsqueeze(1).expand_as(mask)
        on = on & (adv != 0)
    return torch.nonzero(on.any(1)).flatten().tolist()


def loss_weights(loss_type: str, parts: list[Part], mask: torch.Tensor) -> list[float]:
    """What each part's loss (TRL's ``_compute_loss`` on the part alone) is multiplied by so that the parts sum to
    the loss of the whole batch ``mask`` belongs to (rows that are in no part contribute 0 to it)."""
    if loss_type == "dapo":
        return [1.0] * len(parts)
    if loss_type in ROW_MEAN:
        return [len(p.rows) / mask.size(0) for p in parts]
    if loss_type == "bnpo":
        total = float(mask.sum().clamp(min=1.0))
        return [float(mask[p.rows].sum()) / total for p in parts]
    raise ValueError(f"micro-batches: loss_type {loss_type!r} is not one of {', '.join(SPLITTABLE)}")


def splittable(trainer: Any, inputs: dict[str, Any]) -> bool:
    """Whether TRL's loss on ``inputs`` is a sum over rows that the parts reproduce: a text-only batch, a loss
    type above, no batch-wide entropy quantile, no entropy bonus, no MoE aux loss."""
    return (trainer.loss_type in SPLITTABLE and trainer.top_entropy_quantile >= 1.0
            and not getattr(trainer, "_entropy_bonus_enabled", False) and not trainer.aux_loss_enabled
            and "pixel_values" not in inputs and "token_type_ids" not in inputs)
