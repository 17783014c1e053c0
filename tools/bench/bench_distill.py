"""The paper in miniature: base → SFT on the oracle corpus → GRPO through pi, held-out pass@1 at each phase.

Every phase is the CLI a user runs, in order, timed:

  1. corpus   `launch recipes/distill-{pi,mini}.toml --set agent.policy=oracle` on the train split (gold sessions
              through the real pi and mini-swe-agent CLIs, logprobs from the base model)
  2. export   `export sft` of both runs (the token-level variant: the ids the harnesses' requests rendered to and
              our loss mask)
  3. sft      `train sft` on that export → a model dir
  4. grpo     `train grpo recipes/distill-pi.toml` from the SFT model on the train tasks the corpus left out
              (weights pushed every step, TIS against the recorded logprobs, env_mask from our chains)
  5. evals    `eval` of base, SFT and SFT+GRPO on the held-out split through each harness

    python tools/bench/bench_distill.py                    # SmolLM2-135M-Instruct (hours on 2 cores)
    python tools/bench/bench_distill.py --quick            # the plumbing on tiny-qwen3, a few minutes
    python tools/bench/bench_distill.py --json out.json    # the table's figures, one object a row
    python tools/bench/bench_distill.py --work W ...       # again with the same W: resumes after the last phase done

The table: harness x phase held-out pass@1 with its Wilson 95% interval, the corpus (sessions, accepted,
tokens) and each phase's wall time. The split's tasks are `recipes/tasks/distill` (`polar-hpc tasks generate`,
seed 0): held-out names and values never appear in train.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from polar_hpc.measure.eval import EvalRow
from polar_hpc.measure.paired import PairedRow, compare, paired_table
from polar_hpc.tasks.family import DEFAULT_COUNTS
from polar_hpc.tasks.generate import instances
from polar_hpc.wire.session import SOLUTION_FIRST_TRY

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "recipes" / "tasks" / "distill"
RECIPES = {"pi": ROOT / "recipes" / "distill-pi.toml", "mini_swe_agent": ROOT / "recipes" / "distill-mini.toml"}


@dataclass
class Plan:
    model: str
    train: int
    heldout: int
    sft: list[str]
    grpo_steps: int
    grpo_groups: int
    grpo_samples: int
    harnesses: tuple[str, ...]
    sets: list[str] = field(default_factory=list)
    """recipe settings for every eval and train grpo"""
    grpo_sets: list[str] = field(default_factory=list)
    """recipe settings for train grpo only (before ``--grpo-set``'s, which win)"""


# The settings measured best on 2 cores (docs/train.md, "The paper in miniature"): 150 demonstrations, one epoch
# of full fine-tuning; GRPO with 4 groups x 8 sessions a step, every session weighing one, all-equal groups
# refilled (the trainer's own learning rate and refill limit). The jobs' time limit covers a GRPO run of an hour
# and more (the local backend requeues at it).
FULL = Plan(model="asset:smollm2", train=150, heldout=60,
            sft=["--epochs", "1", "--batch-rows", "4", "--learning-rate", "2e-4", "--threads", "2"],
            grpo_steps=3, grpo_groups=4, grpo_samples=8, harnesses=("pi", "mini_swe_agent"),
            grpo_sets=["trainer.loss_norm=session", "trainer.dynamic_sampling=true", "trainer.threads=2",
                       "inference.resources.time_min=480", "gateway.resources.time_min=480",
                       "coordinator.resources.time_min=480"])
QUICK = Plan(model="asset:tiny-qwen3", train=3, heldout=2, sft=["--max-steps", "2", "--batch-rows", "2"],
             grpo_steps=2, grpo_groups=1, grpo_samples=2, harnesses=("pi",),
             sets=["inference.max_new_tokens=16"])


class Phase:
    """Runs one CLI call of the pipeline, its output into the work dir's log, its wall time kept. A call that
    finished before in the same work dir (``KEY.ok``) is not run again: a cut bench resumes where it stopped."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.walls: dict[str, float] = {}

    def __call__(self, name: str, *argv: str, key: str | None = None) -> str:
        key = key or name
        log, done = self.work / f"{key}.log", self.work / f"{key}.ok"
        if done.exists():
            saved = json.loads(done.read_text())
            self.walls[name] = self.walls.get(name, 0.0) + saved["wall_s"]
            print(f"[{time.strftime('%H:%M:%S')}] {key}: done before ({saved['wall_s']:.0f}s), kept", flush=True)
            return str(saved["stdout"])
        cmd = [sys.executable, "-m", "polar_hpc", *argv]
        print(f"[{time.strftime('%H:%M:%S')}] {key}: polar-hpc {' '.join(argv)}", flush=True)
        start = time.monotonic()
        with log.open("w") as out:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=out, text=True, cwd=ROOT)
        wall = time.monotonic() - start
        self.walls[name] = self.walls.get(name, 0.0) + wall
        if proc.returncode != 0:
            tail = log.read_text().strip().splitlines()[-15:]
            raise SystemExit(f"bench_distill: {key} exited {proc.returncode}; last lines of {log}:\n"
                             + "\n".join(tail))
        done.write_text(json.dumps({"wall_s": wall, "stdout": proc.stdout}))
        print(f"    {wall:.0f}s", flush=True)
        return proc.stdout


def split_rows(split: str) -> list[str]:
    """The rows of a shipped split (``recipes/tasks/distill/SPLIT.jsonl``)."""
    return (TASKS / f"{split}.jsonl").read_text().splitlines()


def subset(work: Path, split: str, n: int, *, start: int = 0, name: str | None = None) -> Path:
    """Rows ``start .. start + n`` of a split as ``NAME.jsonl`` (default: the split's name), beside a link to the
    split's repositories (the recipes' ``{tasks_dir}``)."""
    folder = work / "tasks"
    folder.mkdir(exist_ok=True)
    if not (folder / "repos").exists():
        (folder / "repos").symlink_to(TASKS / "repos")
    rows = split_rows(split)[start:start + n]
    path = folder / f"{name or split}.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def with_first_tries(path: Path, every: int, *, start: int = 0) -> Path:
    """Every ``every``-th row of a train subset from row ``start`` on (``start``, ``start + every``, ...) made a
    recovery demonstration: its ``solution_first_try`` the generator's first fix that misses
    (``Instance.first_try``)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    tries = {i.row["task_id"]: i.first_try for i in instances("train", DEFAULT_COUNTS["train"])}
    for n, row in enumerate(rows):
        if n >= start and (n - start) % every == 0 and tries[row["task_id"]]:
            row[SOLUTION_FIRST_TRY] = [tries[row["task_id"]]]
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return path


def rl_tasks(work: Path, corpus_tasks: int) -> Path:
    """GRPO's tasks: the train rows the corpus did not use (a model fitted to its demonstrations solves those
    and gives all-1 groups), or the corpus's own when it used them all."""
    total = len(split_rows("train"))
    if corpus_tasks < total:
        return subset(work, "train", total - corpus_tasks, start=corpus_tasks, name="train-rl")
    return subset(work, "train", total, name="train-rl")


def evaluate(phase: Phase, name: str, model: str, heldout: Path, harnesses: tuple[str, ...], seed: int,
             extra: list[str]) -> list[dict[str, object]]:
    out = phase.work / f"{name}.json"
    recipes = [str(RECIPES[h]) for h in harnesses]
    phase(name, "eval", *recipes, "--model", model, "--tasks", str(heldout), "--seed", str(seed),
          "--json", str(out), "--runs-dir", str(phase.work / "runs"), *extra)
    rows: list[dict[str, object]] = json.loads(out.read_text())
    return rows


def paired_with_sft(rows: list[dict[str, object]]) -> list[PairedRow]:
    """SFT+GRPO against SFT through pi, task by task (``eval --paired``'s figures)."""
    def of(phase: str) -> list[EvalRow]:
        return [msgspec.convert({k: v for k, v in r.items() if k != "phase"}, EvalRow)
                for r in rows if r["phase"] == phase and r["harness"] == "pi"]
    return compare(of("sft"), of("sft+grpo"))


def corpus_stats(phase: Phase, runs: list[Path]) -> dict[str, int]:
    text = phase("inspect", "shards", "inspect", *map(str, runs))
    stats: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if parts[:1] == ["sessions"]:
            stats["sessions"] = int(parts[1])
        elif parts[:1] == ["tokens"]:
            stats.update(prompt_tokens=int(parts[2]), response_tokens=int(parts[4]), trainable_tokens=int(parts[6]))
    return stats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the plumbing on tiny-qwen3 with a handful of tasks")
    ap.add_argument("--work", type=Path, default=None, help="work dir (default: runs/bench-distill-<time>)")
    ap.add_argument("--json", type=Path, default=None, help="write the table's rows here")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train", type=int, help="train tasks in the corpus and GRPO (default: the plan's)")
    ap.add_argument("--heldout", type=int, help="held-out tasks per evaluation (default: the plan's)")
    ap.add_argument("--grpo-steps", type=int)
    ap.add_argument("--skip-base", action="store_true", help="leave out the base model's evaluation")
    ap.add_argument("--harnesses", default=None, help="comma-separated, of: " + ", ".join(RECIPES))
    ap.add_argument("--sft-args", default=None, help="train sft's flags, one string (default: the plan's)")
    ap.add_argument("--retry-demos", type=int, default=0, metavar="N",
                    help="every N-th corpus task a recovery demonstration: a first fix that misses, the failing "
                         "tests, a second look, the fix (default 0: none)")
    ap.add_argument("--retry-demos-added", type=int, default=0, metavar="K",
                    help="K more corpus tasks after --train's, each a recovery demonstration (the --train tasks "
                         "keep their one-try demonstrations; GRPO's tasks start after these)")
    ap.add_argument("--grpo-set", action="append", default=[], metavar="K=V",
                    help="a recipe setting for train grpo (repeatable), e.g. trainer.learning_rate=2e-5")
    args = ap.parse_args()
    plan = QUICK if args.quick else FULL
    plan.train = args.train or plan.train
    plan.heldout = args.heldout or plan.heldout
    plan.grpo_steps = plan.grpo_steps if args.grpo_steps is None else args.grpo_steps
    plan.sft = shlex.split(args.sft_args) if args.sft_args is not None else plan.sft
    if args.harnesses:
        plan.harnesses = tuple(args.harnesses.split(","))
        unknown = sorted(set(plan.harnesses) - set(RECIPES))
        if unknown:
            ap.error(f"--harnesses: {', '.join(unknown)} is not one of {', '.join(RECIPES)}")
    if args.retry_demos < 0 or args.retry_demos_added < 0:
        ap.error(f"--retry-demos / --retry-demos-added must be >= 0, got {args.retry_demos} / "
                 f"{args.retry_demos_added}")
    corpus_tasks = plan.train + args.retry_demos_added
    available = len(split_rows("train"))
    if corpus_tasks > available:
        ap.error(f"--train {plan.train} + --retry-demos-added {args.retry_demos_added} = {corpus_tasks} corpus tasks, "
                 f"but the train split ({TASKS / 'train.jsonl'}) has {available}")
    work = (args.work or ROOT / "runs" / f"bench-distill-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    phase = Phase(work)
    train, heldout = subset(work, "train", corpus_tasks), subset(work, "heldout", plan.heldout)
    if args.retry_demos > 0:
        train = with_first_tries(train, args.retry_demos)
    if args.retry_demos_added > 0:
        train = with_first_tries(train, 1, start=plan.train)
    model_sets = [] if plan.model == "asset:smollm2" else ["--set", f"inference.model={plan.model}"]
    sets = [a for s in plan.sets for a in ("--set", s)]
    seed = ["--set", f"inference.random_seed={args.seed}"]
    print(f"work dir {work}: {corpus_tasks} train / {plan.heldout} held-out tasks, model {plan.model}", flush=True)

    rows: list[dict[str, object]] = []
    if not args.skip_base:
        rows += [r | {"phase": "base"} for r in
                 evaluate(phase, "eval-base", plan.model, heldout, plan.harnesses, args.seed, sets)]
    corpus_runs: list[Path] = []
    for h in plan.harnesses:
        run = work / f"corpus-{h}"
        phase("corpus", "launch", str(RECIPES[h]), "--set", "agent.policy=oracle", "--set", f"tasks.path={train}",
              *model_sets, *seed, "--run-dir", str(run), "--wait", key=f"corpus-{h}")
        corpus_runs.append(run)
    corpus = corpus_stats(phase, corpus_runs)
    export = work / "export"
    phase("export", "export", "sft", *map(str, corpus_runs), "--out", str(export), "--test-fraction", "0",
          "--seed", str(args.seed))
    sft_model = work / "sft-model"
    phase("sft", "train", "sft", str(export), "--out", str(sft_model), "--model", plan.model, "--seed",
          str(args.seed), *plan.sft)
    rows += [r | {"phase": "sft"} for r in
             evaluate(phase, "eval-sft", str(sft_model), heldout, plan.harnesses, args.seed, sets)]
    if plan.grpo_steps > 0 and "pi" in plan.harnesses:
        grpo_run = work / "grpo"
        phase("grpo", "train", "grpo", str(RECIPES["pi"]), "--set", f"tasks.path={rl_tasks(work, corpus_tasks)}",
              "--set", f"trainer.model={sft_model}", "--set", f"inference.model={sft_model}",
              "--set", f"trainer.steps={plan.grpo_steps}", "--set", f"trainer.groups_per_step={plan.grpo_groups}",
              "--set", f"tasks.num_samples={plan.grpo_samples}", "--set", f"trainer.seed={args.seed}", *seed,
              *sets, *[a for s in [*plan.grpo_sets, *args.grpo_set] for a in ("--set", s)],
              "--run-dir", str(grpo_run))
        grpo_model = grpo_run / "checkpoints" / f"step-{plan.grpo_steps}"
        rows += [r | {"phase": "sft+grpo"} for r in
                 evaluate(phase, "eval-grpo", str(grpo_model), heldout, ("pi",), args.seed, sets)]

    walls = {k: round(v, 1) for k, v in phase.walls.items()}
    print(f"\ncorpus: {corpus}\nphase wall s: {walls}\n")
    print(f"{'harness':<16}{'phase':<10}{'n':>5}{'pass@1':>8}   95% CI (Wilson)")
    for r in rows:
        print(f"{r['harness']!s:<16}{r['phase']!s:<10}{r['n']!s:>5}{float(r['pass_at_1']):>8.3f}   "  # type: ignore[arg-type]
              f"[{float(r['ci_low']):.3f}, {float(r['ci_high']):.3f}]")  # type: ignore[arg-type]
    vs_sft = paired_with_sft(rows)
    if vs_sft:
        print(paired_table(vs_sft))
    if args.json:
        table = [{"harness": r["harness"], "phase": r["phase"], "split": "heldout", "n": r["n"],
                  "pass_at_1": r["pass_at_1"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                  "causes": r.get("causes"), "phase_wall_s": walls, "corpus": corpus, "model": plan.model}
                 | ({"vs_sft": msgspec.to_builtins(vs_sft[0])} if vs_sft and r["phase"] == "sft+grpo" else {})
                 for r in rows]
        args.json.write_text(json.dumps(table, indent=1))
        print(f"written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
