"""A toy reward for demonstrating the async loop on a random tiny model (``tools/grpo_loop.py``).

Evaluator ``polar_hpc.train.toy:LowTokenReward``: the share of sampled tokens (loss mask 1) whose id is below
``options.threshold`` (default: half the Qwen3 vocabulary). It varies between samples of a random model, so GRPO
advantages are non-zero, and a policy gradient can raise it.
"""

from __future__ import annotations

import numpy as np

from polar_hpc.evaluate.base import EvalContext, Evaluator
from polar_hpc.wire.records import EvalResult, Trajectory


class LowTokenReward(Evaluator):
    name = "toy_low_tokens"

    async def evaluate(self, trajectory: Trajectory, ctx: EvalContext) -> EvalResult:
        threshold = int(self.spec.options.get("threshold", 75968))
        sampled = [t.response_ids[t.loss_mask.astype(bool)] for t in trajectory.traces]
        ids = np.concatenate(sampled) if sampled else np.zeros(0, dtype=np.int32)
        if not ids.size:
            return EvalResult(outcome_reward=0.0, details={"reason": "no sampled tokens"})
        return EvalResult(outcome_reward=float((ids < threshold).mean()), details={"sampled": int(ids.size)})
