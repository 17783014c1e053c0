"""One GRPO trainer step on recorded rollouts, side by side: one padded batch vs micro-batches by length.

    python tools/bench/bench_grpo_step.py runs/distill11/grpo --model runs/distill11/sft-model \
        --groups 2 --budgets 0,8192 --rounds 1 --threads 2

Replays the first ``--groups`` groups with an advantage of a finished GRPO run (``train/grpo/offline.py``: the
same rows, TIS correction and loss as the live trainer, with the run's own ``[trainer]`` settings) for one
optimizer step from ``--model``, once per ``trainer.micro_batch_tokens`` budget (0: TRL's one padded batch), each
in its own process, budgets interleaved in rounds. Prints per run the step's wall time (TIS pass, loss, backward,
optimizer), the rows and tokens that train (a nonzero advantage) out of the step's and the padded tokens of one
batch, trained tokens/s, peak memory, and the loss; then each budget's ratio to the first and the cosine between
their gradients (the same step: ≈ 1). ``--json PATH`` writes the runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def one(args: argparse.Namespace, budget: int, grad_out: Path) -> None:
    """Child: one step with ``budget``; prints a JSON line, saves the gradient to ``grad_out``."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import msgspec
    import numpy as np
    import torch
    from transformers import TrainerCallback

    from polar_hpc.assets import resolve_model
    from polar_hpc.train.grpo.offline import ShardRollouts, replay_trainer
    from polar_hpc.train.grpo.run import load_policy
    from polar_hpc.wire.rundir import RunDir

    torch.set_num_threads(args.threads)
    cfg = RunDir(args.run).load_config()
    g = cfg.tasks.num_samples
    model, tok = load_policy(resolve_model(args.model), "--model")
    filler = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    rollouts = ShardRollouts([args.run], num_generations=g, filler_id=int(filler))
    chosen = [gid for gid in rollouts.group_ids if any(a != 0 for a in rollouts([gid] * g, None)["advantage"])]
    if len(chosen) < args.groups:
        raise SystemExit(f"{args.run}: {len(chosen)} groups with an advantage, --groups {args.groups}")
    rollouts.groups = {gid: rollouts.groups[gid] for gid in chosen[:args.groups]}
    rows = rollouts(sum([[gid] * g for gid in rollouts.group_ids], []), None)
    lengths = [len(p) + len(c) for p, c in zip(rows["prompt_ids"], rows["completion_ids"], strict=True)]
    trained = [n for n, a in zip(lengths, rows["advantage"], strict=True) if a != 0]
    padded = len(lengths) * (max(map(len, rows["prompt_ids"])) + max(map(len, rows["completion_ids"])))
    t = msgspec.structs.replace(cfg.trainer, groups_per_step=args.groups, micro_batch_tokens=budget)
    grads: list[Any] = []

    class Grab(TrainerCallback):
        def on_pre_optimizer_step(self, *a: Any, **kw: Any) -> None:
            grads.append(torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None]))

    with tempfile.TemporaryDirectory(prefix="bench-grpo-step-") as tmp:
        trainer = replay_trainer(rollouts, model, tok, t, output_dir=tmp, steps=1)
        trainer.add_callback(Grab())
        t0 = time.monotonic()
        trainer.train()
        step_s = time.monotonic() - t0
    np.save(grad_out, grads[0].numpy())
    print(json.dumps({"budget": budget, "step_s": step_s, "rows": len(lengths), "rows_trained": len(trained),
                      "tokens": sum(lengths), "tokens_trained": sum(trained),
                      "one_batch_tokens": padded,
                      "tokens_per_s": sum(trained) / step_s, "loss": trainer.state.log_history[0]["loss"],
                      "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", help="a finished GRPO run dir (its shards and config.toml)")
    p.add_argument("--model", required=True, help="the policy the step starts from (the run's trainer.model)")
    p.add_argument("--groups", type=int, default=2)
    p.add_argument("--budgets", default="0,8192", help="trainer.micro_batch_tokens values, the first the baseline")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", type=Path)
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--grad", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one is not None:
        one(args, args.one, args.grad)
        return 0
    import numpy as np

    budgets = [int(b) for b in args.budgets.split(",")]
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-grpo-step-") as tmp:
        for rnd in range(args.rounds):
            for b in budgets:
                grad = Path(tmp) / f"grad-{b}-{rnd}.npy"
                cmd = [sys.executable, __file__, args.run, "--model", args.model, "--groups", str(args.groups),
                       "--threads", str(args.threads), "--one", str(b), "--grad", str(grad)]
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.stderr.write(out.stderr[-3000:])
                    return 1
                res = json.loads(out.stdout.strip().splitlines()[-1])
                res["round"], res["load"] = rnd, os.getloadavg()[0]
                base = np.load(Path(tmp) / f"grad-{budgets[0]}-{rnd}.npy")
                mine = np.load(grad)
                res["grad_cosine"] = float(base @ mine / (np.linalg.norm(base) * np.linalg.norm(mine)))
                res["grad_rel_diff"] = float(np.linalg.norm(mine - base) / np.linalg.norm(base))
                runs.append(res)
                print(json.dumps(res), flush=True)
    first = statistics.median(r["step_s"] for r in runs if r["budget"] == budgets[0])
    print(f"\n{'budget':>8s} {'step s':>8s} {'ratio':>6s} {'tok/s':>7s} {'rows':>9s} {'tokens':>13s} "
          f"{'rss MB':>7s} {'loss':>10s} {'grad cos':>9s}")
    for b in budgets:
        mine = [r for r in runs if r["budget"] == b]
        s = statistics.median(r["step_s"] for r in mine)
        r0 = mine[0]
        rss, cos = max(r["max_rss_mb"] for r in mine), min(r["grad_cosine"] for r in mine)
        print(f"{b:8d} {s:8.1f} {first / s:6.2f} {r0['tokens_trained'] / s:7.1f} "
              f"{r0['rows_trained']:4d}/{r0['rows']:<4d} {r0['tokens_trained']:6d}/{r0['tokens']:<6d} "
              f"{rss:7.0f} {r0['loss']:10.3g} {cos:9.6f}")
    r0 = runs[0]
    print("ratio: the first budget's step time over this one's (higher: faster); tokens: the trained rows' / all "
          f"rows'; one padded batch holds {r0['one_batch_tokens']} tokens "
          f"({r0['one_batch_tokens'] / r0['tokens']:.2f}x the rows')")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
