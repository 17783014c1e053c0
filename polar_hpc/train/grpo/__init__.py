"""GRPO with TRL on polar-hpc rollouts: ``polar-hpc train grpo RECIPE`` (live) and replays of recorded shards.

- ``batch``: evaluated groups -> TRL ``rollout_func`` rows (one per session; a group keeps its size).
- ``tis``: ``TisGRPOTrainer``, truncated importance sampling against the recorded rollout logprobs.
- ``live``: ``LiveRollouts``, a ``rollout_func`` on ``AsyncRollouts``; it loads new weights when no group generates
  (exact staleness) or while sessions run (``trainer.staleness = "in_flight"``).
- ``inflight``: the version that sampled each token, and the staleness bound per session (drop / mask).
- ``weights``: ``PushWeights`` (a TRL callback: saves the weights after every step, records the step's metrics) and
  ``StagedWeights`` (the newest saved checkpoint, loaded on every engine by ``push``).
- ``offline``: ``ShardRollouts``, a ``rollout_func`` replaying a finished run's groups from its shards.
- ``metrics``: per-step metrics in ``run_dir/trainer/steps.jsonl`` (``polar-hpc report`` plots them).
- ``run`` / ``cli``: the command.
"""
