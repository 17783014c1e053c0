"""A worked async GRPO loop on the CPU through the whole stack.

    python tools/grpo_loop.py [--steps 3] [--tasks 2] [--samples 4] [--sync] [--run-dir DIR]

Launches a local run (reference server with tiny-qwen3, coordinator, one gateway rank with bubblewrap sandboxes
running the shell harness's mini agent), then: submit GRPO groups tagged with the policy version -> receive
evaluated groups -> one AdamW step of a clipped policy-gradient loss on the tiny model (torch, CPU) -> save a
checkpoint -> push it with ``update_policy`` -> repeat. The next step's groups are submitted before training
(async, one step off policy) unless ``--sync``. The reward is a toy (``polar_hpc.train.toy``): the share of
sampled token ids in the lower half of the vocabulary. Prints reward / loss / weight versions per step and the
fraction of wall time the trainer waited on rollouts. Stops the run (``polar-hpc cancel``) at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import torch

from polar_hpc.assets import asset_path
from polar_hpc.train.async_client import AsyncConfig, AsyncRollouts, Group, TrainSample, group_samples
from polar_hpc.wire.endpoints import endpoint_path, wait_endpoints
from polar_hpc.wire.records import SessionResult, Task
from polar_hpc.wire.rundir import RunDir

RECIPE = """
name = "grpo-loop"
[launch]
backend = "local"
[inference]
engine = "reference"
model = "asset:tiny-qwen3"
context_length = 2048
max_new_tokens = {max_new_tokens}
[gateway]
num_ranks = 1
init_pool = 2
ready_buffer = 2
run_pool = 4
postrun_pool = 2
agent_timeout_s = 60
session_timeout_s = 120
[runtime]
backend = "bwrap"
host_python = true
[agent]
harness = "shell"
command = "python3 -m polar_hpc.harness.mini_agent --max-turns 1 --max-tokens {max_new_tokens} {{instruction}}"
[evaluator]
name = "polar_hpc.train.toy:LowTokenReward"
[coordinator]
heartbeat_timeout_s = 60
"""
PROMPTS = ["Say hello.", "Count to three.", "Name a colour.", "Write one word.", "Add 2 and 2.", "Spell cat."]
MODEL_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
               "generation_config.json")


def polar(*args: str, log: Path, timeout: float) -> int:
    """Run a polar-hpc command; output to ``log`` (a pipe would stay open in the processes a launch starts)."""
    with open(log, "ab") as f:
        return subprocess.run([sys.executable, "-m", "polar_hpc", *args], stdout=f, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=timeout).returncode


def advantages(groups: list[Group]) -> dict[tuple[str, int], float]:
    out = {}
    for g in groups:
        r = g.rewards
        adv = (r - r.mean()) / (r.std() + 1e-6)
        for res, a in zip(sorted(g.results, key=lambda x: x.sample_index), adv.tolist(), strict=True):
            out[(g.group_id, res.sample_index)] = a
    return out


def policy_loss(model: torch.nn.Module, s: TrainSample, adv: float, clip: float = 0.2) -> torch.Tensor | None:
    mask = torch.from_numpy(s.loss_mask[1:].astype(np.float32))
    if s.masked or adv == 0.0 or mask.sum() == 0:
        return None
    ids = torch.from_numpy(s.tokens.astype(np.int64))[None]
    logp = torch.log_softmax(model(ids).logits[0, :-1].float(), -1).gather(-1, ids[0, 1:, None])[:, 0]
    old = torch.zeros_like(logp)
    old[s.prompt_length - 1:] = torch.from_numpy(s.rollout_logprobs)
    ratio = torch.exp(logp - old) * mask + (1 - mask)  # 1 where masked (no gradient flows there anyway)
    obj = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv)
    return -(obj * mask).sum() / mask.sum()


def save_checkpoint(model: torch.nn.Module, base: Path, out: Path) -> Path:
    model.save_pretrained(out, safe_serialization=True)  # type: ignore[operator]
    for name in MODEL_FILES:
        if (base / name).exists() and not (out / name).exists():
            shutil.copy(base / name, out / name)
    return out


async def next_groups(results: AsyncIterator[SessionResult], ro: AsyncRollouts, want: int,
                      timeout_s: float) -> list[Group]:
    """Up to ``want`` usable groups; fewer when nothing else is pending (stale / incomplete ones are dropped)."""
    got: list[Group] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < want and ro.pending:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"waited {timeout_s:.0f}s for {want} groups; have {len(got)}, {ro.pending} pending")
        group = ro.accept(await asyncio.wait_for(anext(results), left))
        if group is not None:
            got.append(group)
    if not got:
        raise RuntimeError(f"every submitted group was dropped: {ro.stats}")
    return got


async def loop(run_dir: Path, args: argparse.Namespace) -> None:
    from transformers import AutoModelForCausalLM

    base = asset_path("tiny-qwen3")
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    tasks = [Task(task_id=f"toy-{i}", instruction=PROMPTS[i % len(PROMPTS)]) for i in range(args.tasks)]
    wait = train = 0.0
    t_start = time.monotonic()
    async with AsyncRollouts(run_dir, AsyncConfig(max_off_policy_steps=1, min_group_fraction=0.5)) as ro:
        results = ro.client.results().__aiter__()
        await ro.submit_groups(tasks, rollout_step=0, num_samples=args.samples)
        for step in range(args.steps):
            t0 = time.monotonic()
            groups = await next_groups(results, ro, len(tasks), args.group_timeout)
            wait += time.monotonic() - t0
            if not args.sync and step + 1 < args.steps:
                await ro.submit_groups(tasks, rollout_step=step + 1, num_samples=args.samples)
            t1 = time.monotonic()
            adv = advantages(groups)
            samples = [s for g in groups for s in group_samples(g)]
            losses = [loss for s in samples
                      if (loss := policy_loss(model, s, adv[(s.group_id, s.sample_index)])) is not None]
            opt.zero_grad()
            loss_value = float("nan")
            if losses:
                total = torch.stack(losses).mean()
                total.backward()
                opt.step()
                loss_value = float(total.detach())
            ckpt = save_checkpoint(model, base, run_dir / "checkpoints" / f"step-{step + 1}")
            await ro.update_policy(ckpt, step + 1)
            train += time.monotonic() - t1
            if args.sync and step + 1 < args.steps:
                await ro.submit_groups(tasks, rollout_step=step + 1, num_samples=args.samples)
            rewards = np.concatenate([g.rewards for g in groups])
            versions = sorted({v for s in samples for v in s.weight_versions})
            print(f"step {step}: groups {len(groups)} (policy {sorted({g.policy_version for g in groups})}, "
                  f"rollout steps {sorted({g.rollout_step for g in groups})})  reward {rewards.mean():.4f}  "
                  f"loss {loss_value:.4f}  weight_version in records {versions}  -> pushed v{step + 1}",
                  flush=True)
        await results.aclose()  # type: ignore[attr-defined]
    total_s = time.monotonic() - t_start
    mode = "sync" if args.sync else "async"
    print(f"{mode}: {args.steps} steps in {total_s:.1f}s; trainer waited on rollouts {wait:.1f}s "
          f"({100 * wait / total_s:.0f}% of wall time), trained+pushed {train:.1f}s; stale groups dropped "
          f"{ro.stats.stale}, incomplete {ro.stats.incomplete}; weight updates {ro.stats.weight_updates} "
          f"({ro.stats.update_seconds:.2f}s)", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--tasks", type=int, default=2, help="groups per step")
    p.add_argument("--samples", type=int, default=4, help="samples per group")
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--sync", action="store_true", help="submit the next step's groups only after the update")
    p.add_argument("--run-dir", type=Path)
    p.add_argument("--group-timeout", type=float, default=300.0)
    p.add_argument("--keep", action="store_true", help="leave the run dir (default: removed unless --run-dir)")
    args = p.parse_args()
    tmp = None if args.run_dir else tempfile.mkdtemp(prefix="grpo-loop-")
    run_dir = args.run_dir or Path(tmp or ".") / "run"
    recipe = run_dir.parent / "grpo-loop.toml"
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    recipe.write_text(RECIPE.format(max_new_tokens=args.max_new_tokens))
    log = run_dir.parent / "grpo-loop-launch.log"
    if polar("launch", str(recipe), "--run-dir", str(run_dir), log=log, timeout=300) != 0:
        sys.stderr.write(log.read_text())
        return 1
    try:
        wait_endpoints(run_dir, ["inference-0"], timeout_s=300)
        deadline = time.monotonic() + 120
        while not endpoint_path(run_dir, "coordinator").exists():  # the coordinator's own format
            if time.monotonic() > deadline:
                raise TimeoutError(f"no coordinator endpoint in {RunDir(run_dir).endpoints} after 120s")
            time.sleep(0.5)
        asyncio.run(loop(run_dir, args))
    finally:
        if polar("cancel", str(run_dir), "--grace", "15", log=log, timeout=180) != 0:
            sys.stderr.write(f"polar-hpc cancel {run_dir} failed; see {log}\n")
        if tmp and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
