"""The CPU learning curve through the whole stack, beside TRL's own GRPO on the same model, task and batch.

1. Stack: ``polar-hpc train grpo recipes/local-grpo.toml`` (SmolLM2-135M-Instruct on the reference server, the
   shell harness making one chat call per session with curl in a bubblewrap sandbox, a command checking the sum;
   TRL with truncated IS against the recorded logprobs, one step off policy, weights pushed every step).
2. TRL alone: ``GRPOTrainer`` with its built-in generation (no harness, no server) on the same tasks, prompt,
   group size, learning rate, loss, completion length and reward check, in this process.

The stack runs ``--steps`` steps, TRL alone ``--trl-steps``, with the same seed, one after the other (never at
once: they would share the CPUs).
Prints the per-step tables, the mean reward of the first and last 5 steps, and the median wall time per step of
each with their ratio. Threads: the recipe's (trainer.threads for the stack's trainer and for TRL alone, one for
the engine); OMP_WAIT_POLICY=PASSIVE for both.

    python tools/bench/bench_grpo.py [--steps N] [--trl-steps 10] [--seed 0] [--only stack|trl] [--set K=V ...]
        [--stack-run RUN_DIR]   (the stack table of a finished run, beside a fresh TRL-alone measurement)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from polar_hpc.config import load_recipe  # noqa: E402

RECIPE = ROOT / "recipes" / "local-grpo.toml"
NUMBER = re.compile(r"-?[0-9]+")


def first5_last5(rewards: list[float]) -> tuple[float, float]:
    k = min(5, len(rewards))
    return sum(rewards[:k]) / k, sum(rewards[-k:]) / k


def run_stack(steps: int, seed: int, overrides: list[str], work: Path) -> list[dict[str, Any]]:
    from polar_hpc.train.grpo.metrics import read_steps

    run_dir = work / "stack-run"
    cmd = [sys.executable, "-m", "polar_hpc", "train", "grpo", str(RECIPE), "--run-dir", str(run_dir),
           "--set", f"trainer.steps={steps}", "--set", f"trainer.seed={seed}",
           "--set", f"inference.random_seed={seed}", *[a for o in overrides for a in ("--set", o)]]
    print("stack:", " ".join(cmd[1:]), flush=True)
    with open(work / "stack.log", "wb") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL).returncode
    sys.stdout.write((work / "stack.log").read_text(errors="replace")[-200:] if rc else "")
    steps_done = read_steps(run_dir)
    if not steps_done:
        raise SystemExit(f"stack run failed (exit {rc}); see {work / 'stack.log'}")
    if rc != 0:
        print(f"stack run ended with exit {rc} after {len(steps_done)} steps; see {work / 'stack.log'}")
    return steps_table(run_dir)


def steps_table(run_dir: Path) -> list[dict[str, Any]]:
    from polar_hpc.train.grpo.metrics import read_steps

    return [{"step": m.step, "reward": float("nan") if m.reward is None else m.reward, "loss": m.loss,
             "dlogp": m.logp_diff_mean,
             "dlogp_max": m.logp_diff_max, "clipped": m.clipped_share, "versions": ",".join(m.rollout_versions),
             "wait": m.wait_s / m.step_s if m.step_s else 0.0, "step_s": m.step_s} for m in read_steps(run_dir)]


def run_trl(steps: int, seed: int, overrides: list[str], work: Path) -> list[dict[str, Any]]:
    import torch
    from datasets import Dataset
    from transformers import PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from polar_hpc.tasks.source import iter_tasks
    from polar_hpc.train.grpo.run import load_policy, schedule, trainer_model_dir

    cfg = load_recipe(RECIPE, [f"trainer.seed={seed}", *overrides])
    t = cfg.trainer
    torch.set_num_threads(t.threads)
    tasks = {x.task_id: x for x in iter_tasks(cfg)}
    answer = {x.task_id: x.instruction for x in tasks.values()}
    order = schedule(sorted(tasks), steps * t.groups_per_step, seed)
    rows = {"prompt": [[{"role": "user", "content": tasks[i].instruction}] for i in order],
            "answer": [sum(int(n) for n in NUMBER.findall(answer[i])) for i in order]}
    model, tok = load_policy(trainer_model_dir(cfg))

    def correct(completions: list[Any], answer: list[int], **_: Any) -> list[float | None]:
        out: list[float | None] = []
        for c, a in zip(completions, answer, strict=True):
            m = NUMBER.search(c[0]["content"])
            out.append(1.0 if m and int(m.group()) == a else 0.0)
        return out

    table: list[dict[str, Any]] = []

    class Record(TrainerCallback):
        t0 = time.monotonic()

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kw: Any) -> None:
            if logs and "loss" in logs:
                now = time.monotonic()
                table.append({"step": state.global_step, "reward": float(logs["reward"]),
                              "loss": float(logs["loss"]), "step_s": now - Record.t0})
                Record.t0 = now
                print(f"trl step {state.global_step}: reward {float(logs['reward']):.3f}", flush=True)

    g = cfg.tasks.num_samples
    args = GRPOConfig(
        output_dir=str(work / "trl"), per_device_train_batch_size=g * t.groups_per_step, num_generations=g,
        gradient_accumulation_steps=1, steps_per_generation=1, max_steps=steps, learning_rate=t.learning_rate,
        lr_scheduler_type=t.lr_scheduler,
        beta=t.beta, loss_type=t.loss_type, seed=seed, shuffle_dataset=False,
        max_completion_length=cfg.inference.max_new_tokens, temperature=1.0, top_p=1.0, top_k=0,
        logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True,
        dataloader_pin_memory=False, bf16=False,
        use_cpu=not torch.cuda.is_available(),
    )
    tr = GRPOTrainer(model=model, reward_funcs=[correct], args=args, processing_class=tok,
                     train_dataset=Dataset.from_dict(rows), callbacks=[Record()])
    tr.remove_callback(PrinterCallback)
    Record.t0 = time.monotonic()
    tr.train()
    return table


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, help="stack steps (default: the recipe's trainer.steps)")
    p.add_argument("--trl-steps", type=int, default=10,
                   help="steps of TRL alone (its wall time per step is the reference; its curve is a bonus)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--only", choices=["stack", "trl"])
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="recipe override for both sides (e.g. trainer.learning_rate=3e-5)")
    p.add_argument("--out", type=Path, help="also write both tables here as JSON")
    p.add_argument("--stack-run", type=Path, help="print the stack table of this finished run instead of running")
    args = p.parse_args()
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs", flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench-grpo-"))
    t0 = time.monotonic()
    steps = args.steps or load_recipe(RECIPE, args.overrides).trainer.steps
    if args.stack_run:
        stack = steps_table(args.stack_run)
    else:
        stack = run_stack(steps, args.seed, args.overrides, work) if args.only != "trl" else []
    t_stack = time.monotonic() - t0
    trl = run_trl(args.trl_steps, args.seed, args.overrides, work) if args.only != "stack" else []
    t_trl = time.monotonic() - t0 - t_stack
    if stack:
        print(f"\nstack ({t_stack:.0f}s in all, launch and cancel included; work dir {work})")
        print("step  reward  loss      |dlogp|   max       clipped  rollout-v  waited  step_s")
        for r in stack:
            print(f"{r['step']:4d}  {r['reward']:.3f}   {r['loss']:+.4f}  {r['dlogp']:.2e}  {r['dlogp_max']:.2e}  "
                  f"{100 * r['clipped']:5.1f}%  {r['versions']:>9}  {100 * r['wait']:4.0f}%  {r['step_s']:6.1f}")
    if trl:
        print(f"\nTRL alone ({t_trl:.0f}s in all)")
        print("step  reward  loss      step_s")
        for r in trl:
            print(f"{r['step']:4d}  {r['reward']:.3f}   {r['loss']:+.4f}  {r['step_s']:6.1f}")
    print()
    for name, tab in (("stack", stack), ("TRL alone", trl)):
        if tab:
            a, b = first5_last5([r["reward"] for r in tab])
            med = statistics.median(r["step_s"] for r in tab)
            print(f"{name:9s}: reward first 5 {a:.3f} -> last 5 {b:.3f} ({b - a:+.3f}); median step {med:.1f}s; "
                  f"{sum(r['step_s'] for r in tab):.0f}s for {len(tab)} steps")
    if stack and trl:
        ratio = statistics.median(r["step_s"] for r in stack) / statistics.median(r["step_s"] for r in trl)
        print(f"wall time per step, stack / TRL alone (medians): {ratio:.2f}x")
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.out:
        args.out.write_text(json.dumps({"stack": stack, "trl": trl}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
