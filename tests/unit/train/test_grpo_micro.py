"""Micro-batches (``train/grpo/micro.py``): the plan packs rows by length within the budget, and real TRL on
tiny-qwen3 gets the same loss and gradient from a step's rows in micro-batches as from one padded batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from polar_hpc.train.async_client import Group
from polar_hpc.train.grpo.batch import group_completions, rollout_output, session_reward
from polar_hpc.wire.traces import TraceStatus
from tests.fixtures.trajectories import make_session_result

torch = pytest.importorskip("torch", reason="the train extra (torch, trl) is not installed")


def test_the_plan_packs_longest_first_within_the_budget_and_cuts_each_part_to_its_rows() -> None:
    from polar_hpc.train.grpo.micro import even, loss_weights, plan, row_spans, take, trained_rows

    prompt_mask = torch.tensor([[0, 1, 1], [1, 1, 1], [0, 0, 1], [0, 1, 1]])
    completion_mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0]])
    prompt, completion = row_spans(prompt_mask, completion_mask)
    assert (prompt, completion) == ([2, 3, 1, 2], [2, 4, 1, 0])
    advantages = torch.tensor([0.5, -1.0, 2.0, 3.0])
    rows = trained_rows(advantages, completion_mask, beta=0.0)
    assert rows == [0, 1, 2]  # row 3 has no completion token
    parts = plan(rows, prompt, completion, budget=8, prompt_width=3)
    assert [p.rows for p in parts] == [[1], [0, 2]]  # 7 tokens alone; 0 and 2 together: 2 x (2 + 2) = 8
    assert [(p.prompt_from, p.completion_to) for p in parts] == [(0, 4), (1, 2)]
    x = take({"prompt_ids": prompt_mask * 5, "prompt_mask": prompt_mask, "completion_ids": completion_mask * 7,
              "completion_mask": completion_mask, "advantages": advantages, "num_items_in_batch": torch.tensor(7)},
             parts[1])
    assert x["prompt_ids"].tolist() == [[5, 5], [0, 5]] and x["completion_mask"].tolist() == [[1, 1], [1, 0]]
    assert x["advantages"].tolist() == [0.5, 2.0] and int(x["num_items_in_batch"]) == 7
    assert plan(rows, prompt, completion, budget=1, prompt_width=3)[0].rows == [1]  # too long: a part alone
    # several processes: every row, as many a part (TRL gathers per-row figures across them)
    assert [p.rows for p in even(4, prompt, completion, per_part=2, prompt_width=3)] == [[1, 0], [2, 3]]
    assert loss_weights("grpo", parts, completion_mask) == [0.25, 0.5]
    assert loss_weights("bnpo", parts, completion_mask) == [4 / 7, 3 / 7]
    assert trained_rows(torch.zeros(4), completion_mask, beta=0.1) == [0, 1, 2]  # KL trains every row
    with pytest.raises(ValueError, match="cispo"):
        loss_weights("cispo", parts, completion_mask)


def _group(gid: str, rewards: list[float], seed: int) -> Group:
    rng = np.random.default_rng(seed)
    results = [make_session_result(rng, task_id=gid, sample_index=i, traces=n, turns=2, reward=r, messages=False,
                                   status=TraceStatus.COMPLETED, prompt_tokens=(6, 30), response_tokens=(3, 20),
                                   tool_tokens=(2, 8))
               for i, (n, r) in enumerate(zip([2, 1, 1], rewards, strict=True))]
    return Group(group_id=gid, base_task_id=gid, policy_version=0, rollout_step=0, num_samples=3, results=results)


class Rows:
    """Two groups: one with an advantage, one whose sessions all scored 1 (its rows train nothing)."""

    def __init__(self) -> None:
        self.rows = (group_completions(_group("a@0", [1.0, 0.0, 1.0], 0), filler_id=0)[0]
                     + group_completions(_group("b@0", [1.0, 1.0, 1.0], 1), filler_id=0)[0])

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        return rollout_output(self.rows)


@pytest.mark.slow  # ~20 s a case on the 2 shared cores (tiny-qwen3's 151k vocabulary head)
@pytest.mark.parametrize(("loss_type", "loss_norm", "band"),
                         [("dapo", "session", False), ("bnpo", "token", False), ("grpo", "session", False),
                          ("dapo", "session", True)])
def test_micro_batches_give_the_one_batch_loss_and_gradient(tmp_path: Path, tiny_qwen3_dir: Path, loss_type: str,
                                                            loss_norm: str, band: bool,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a TIS band the weights come from each micro-batch's loss forward; with one (``tis_mask``), from a
    no-grad pass in micro-batches before the loss. Either way: TRL's one-batch loss and gradient."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig
    from trl.trainer.utils import shuffle_sequence_dict

    from polar_hpc.train.grpo.tis import TisGRPOTrainer, tis_correction

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(tiny_qwen3_dir), dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(str(tiny_qwen3_dir))
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=3, num_generations=3, max_steps=1,
                      learning_rate=1e-3, loss_type=loss_type, logging_steps=1, save_strategy="no",
                      report_to="none", disable_tqdm=True, use_cpu=True, shuffle_dataset=False,
                      dataloader_pin_memory=False, bf16=False)
    trainer = TisGRPOTrainer(model=model, reward_funcs=[session_reward], args=args, processing_class=tok,
                             train_dataset=Dataset.from_dict({"prompt": ["a@0"] * 3}), rollout_func=Rows(),
                             tis_clip=2.0, loss_norm=loss_norm)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by the training loop, which this test does not run

    def loss_and_grad(budget: int) -> tuple[float, torch.Tensor, dict[str, Any]]:
        trainer.micro_batch_tokens = budget
        model.zero_grad()
        out = trainer._generate_and_score_completions([{"prompt": "a@0"}] * 3)
        torch.manual_seed(1)
        loss = trainer.compute_loss(model, shuffle_sequence_dict(out))  # as TRL shuffles a step's rows
        trainer.accelerator.backward(loss)
        grad = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        return float(loss.detach()), grad, out

    _, _, first = loss_and_grad(0)
    mask = first["completion_mask"] * first["tool_mask"]
    if band:  # c = exp(median |Δ|) masks about half of the tokens (the fixture's logprobs are far from the model's)
        delta = (first["old_per_token_logps"] - first["sampling_per_token_logps"])[mask > 0].abs()
        trainer.tis_mask = float(torch.exp(delta.median()))
    whole_loss, whole_grad, whole = loss_and_grad(0)
    assert whole["completion_ids"].shape[0] == 8  # 4 chains with an advantage, 4 without
    widest = whole["prompt_ids"].shape[1] + whole["completion_ids"].shape[1]
    micro_loss, micro_grad, micro = loss_and_grad(widest + 1)  # rows one or two at a time
    trained = (mask * (whole["advantages"] != 0)).any(1)
    assert int(trained.sum()) == 4
    assert ("old_per_token_logps" in micro) == band  # no pass of its own without a band
    # the figures cover the trainable tokens of the rows that train
    scored = mask * trained.unsqueeze(1)
    expect = tis_correction(whole["old_per_token_logps"], whole["sampling_per_token_logps"], scored, clip=2.0,
                            band=trainer.tis_mask).stats
    assert trainer.last_tis is not None and trainer.last_tis.tokens == int(scored.sum()) > 0
    assert trainer.last_tis.logp_diff_mean == pytest.approx(expect.logp_diff_mean, rel=1e-4)
    assert trainer.last_tis.masked_share == pytest.approx(expect.masked_share)
    assert (trainer.last_tis.masked_share > 0) == band
    # float error only: cutting the padding shifts positions by a constant (rotary) and changes reduction order
    assert micro_loss == pytest.approx(whole_loss, rel=1e-4, abs=1e-6)
    assert float(whole_grad.norm()) > 0
    cos = float(torch.nn.functional.cosine_similarity(micro_grad, whole_grad, dim=0))
    assert cos > 0.9999 and float((micro_grad - whole_grad).norm() / whole_grad.norm()) < 1e-3
