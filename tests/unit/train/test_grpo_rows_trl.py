"""Real TRL on tiny-qwen3 trains a step whose rows are the chains of its sessions (more rows than TRL's prompts):
the advantage TRL's loss sees per token is the session's advantage times the ``loss_norm`` weight times the TIS
weight, and the step runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from polar_hpc.train.async_client import Group
from polar_hpc.train.grpo.batch import group_completions, rollout_output, session_reward
from polar_hpc.train.grpo.credit import token_weights
from polar_hpc.wire.traces import TraceStatus
from tests.fixtures.trajectories import make_session_result

pytestmark = pytest.mark.slow  # 12-24 s on the 2 shared cores (tiny-qwen3's 151k vocabulary head)
torch = pytest.importorskip("torch", reason="the train extra (torch, trl) is not installed")
GID = "add@step0"


def _group() -> Group:
    rng = np.random.default_rng(0)
    results = [make_session_result(rng, task_id=GID, sample_index=i, traces=n, turns=1, reward=r, messages=False,
                                   status=TraceStatus.COMPLETED, prompt_tokens=(6, 12), response_tokens=(3, 6),
                                   tool_tokens=(2, 3))
               for i, (n, r) in enumerate([(3, 1.0), (1, 0.0), (2, 1.0)])]
    return Group(group_id=GID, base_task_id="add", policy_version=0, rollout_step=0, num_samples=3, results=results)


class Rows:
    def __init__(self) -> None:
        self.rows, _ = group_completions(_group(), filler_id=0)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        return rollout_output(self.rows)


def test_a_step_of_chain_rows_trains_with_session_credit(tmp_path: Path, tiny_qwen3_dir: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from polar_hpc.train.grpo.tis import TisGRPOTrainer, tis_weights

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(tiny_qwen3_dir), dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(str(tiny_qwen3_dir))
    rows = Rows()
    assert len(rows.rows) == 6  # 3 sessions, 6 chains
    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=3, num_generations=3, max_steps=1,
                      learning_rate=1e-3, loss_type="dapo", logging_steps=1, save_strategy="no", report_to="none",
                      disable_tqdm=True, use_cpu=True, shuffle_dataset=False, dataloader_pin_memory=False, bf16=False)
    trainer = TisGRPOTrainer(model=model, reward_funcs=[session_reward], args=args, processing_class=tok,
                             train_dataset=Dataset.from_dict({"prompt": [GID] * 3}), rollout_func=rows, tis_clip=2.0,
                             loss_norm="session")
    trainer.model.train()
    out = trainer._generate_and_score_completions([{"prompt": GID}] * 3)
    mask = out["completion_mask"] * out["tool_mask"]
    assert out["completion_ids"].shape[0] == 6 and out["advantages"].shape == mask.shape
    w = token_weights(mask.numpy(), [r.session for r in rows.rows], [GID] * 6, loss_norm="session",
                      loss_type="dapo")
    tis, _ = tis_weights(out["old_per_token_logps"], out["sampling_per_token_logps"], mask, clip=2.0)
    adv = torch.tensor([r.advantage for r in rows.rows]).unsqueeze(1)
    torch.testing.assert_close(out["advantages"], adv * torch.as_tensor(w, dtype=torch.float32) * tis)
    split = trainer.last_tis.mismatch if trainer.last_tis is not None else None  # |Δlogp| by harness, lag, turn
    assert split is not None and all(sum(b.tokens for b in split.axis(a).values()) == int(mask.sum())
                                     for a in ("harness", "lag", "turn"))
    # rewards 1, 0, 1 -> the 0 session is below the baseline on every token of its one row
    assert (out["advantages"][3][mask[3] > 0] < 0).all() and (out["advantages"][:3][mask[:3] > 0] > 0).all()
    # IcePop: ratios outside [1/c, c] leave the loss mask and dapo's normalizer; c = exp(median |Δ|) masks about
    # half of the tokens (the fixture's logprobs are synthetic, far from the model's)
    delta = (out["old_per_token_logps"] - out["sampling_per_token_logps"])[mask > 0].abs()
    trainer.tis_mask = float(torch.exp(delta.median()))
    masked_out = trainer._generate_and_score_completions([{"prompt": GID}] * 3)
    masked = trainer.last_tis.mismatch if trainer.last_tis is not None else None
    gone = sum(b.masked for b in masked.harness.values()) if masked is not None else 0
    kept = masked_out["completion_mask"] * masked_out["tool_mask"]
    assert 0 < gone < int(mask.sum()) and int(kept.sum()) == int(mask.sum()) - gone
    assert int(masked_out["num_items_in_batch"]) == int(out["num_items_in_batch"]) - gone
    assert (masked_out["advantages"][(mask > 0) & (kept == 0)] == 0).all()
    trainer.tis_mask = 0.0
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainer.train()
    assert any(not torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert trainer.state.log_history and np.isfinite(trainer.state.log_history[0]["loss"])


class ThenNoAdvantage:
    """Step 1: the group's rows; step 2: the same sessions all rewarded 1, so no row carries an advantage."""

    def __init__(self) -> None:
        self.calls = 0
        self.first, _ = group_completions(_group(), filler_id=0)
        same = _group()
        for r in same.results:
            assert r.evaluation is not None
            r.evaluation.outcome_reward = 1.0
        self.second, _ = group_completions(same, filler_id=0)
        assert all(r.advantage == 0 for r in self.second)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        self.calls += 1
        return rollout_output(self.first if self.calls == 1 else self.second)


def test_a_step_without_advantage_leaves_the_weights_alone(tmp_path: Path, tiny_qwen3_dir: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """AdamW with a zero gradient still moves every weight by its momentum; a step that has nothing to learn from
    (every group set aside or a placeholder) must not, bit for bit."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig

    from polar_hpc.train.grpo.tis import TisGRPOTrainer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(tiny_qwen3_dir), dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(str(tiny_qwen3_dir))
    snaps: list[dict[str, Any]] = []

    class Snapshot(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            snaps.append({k: v.detach().clone() for k, v in model.state_dict().items()})

    args = GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=3, num_generations=3, max_steps=2,
                      learning_rate=1e-3, loss_type="dapo", logging_steps=1, save_strategy="no", report_to="none",
                      disable_tqdm=True, use_cpu=True, shuffle_dataset=False, dataloader_pin_memory=False, bf16=False)
    trainer = TisGRPOTrainer(model=model, reward_funcs=[session_reward], args=args, processing_class=tok,
                             train_dataset=Dataset.from_dict({"prompt": [GID] * 6}), rollout_func=ThenNoAdvantage(),
                             tis_clip=2.0, callbacks=[Snapshot()])
    before = {k: v.clone() for k, v in model.state_dict().items()}
    trainer.train()
    assert len(snaps) == 2 and not trainer.signal
    assert any(not torch.equal(v, before[k]) for k, v in snaps[0].items())  # step 1 learnt
    changed = [k for k, v in snaps[1].items() if not torch.equal(v, snaps[0][k])]
    assert not changed, f"a step without advantage moved {len(changed)} tensors, e.g. {changed[:3]}"
