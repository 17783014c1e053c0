"""``polar-hpc eval RECIPE... --model DIR|asset:NAME --tasks FILE``: pass@1 (Wilson 95% CI), pass@k and failure
causes per harness, from sampled sessions through each recipe's real harness; ``polar-hpc eval --from RUN...``: the
same figures from runs already made (``--paired``: each against the first, task by task). Exit 1 when a run did not
finish (its figures are over what it committed)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("eval", help="measure a model through recipes' real harnesses on a task file: "
                                           "pass@1 with a 95%% Wilson interval, pass@k, failure causes")
    p.add_argument("recipes", nargs="*", metavar="RECIPE", help="recipe TOML(s); one row per harness")
    p.add_argument("--from", dest="runs", action="append", default=[], type=Path, metavar="RUN",
                   help="measure a run already made (e.g. an eval cut by --timeout) instead of launching; repeatable")
    p.add_argument("--paired", action="store_true",
                   help="with two or more --from runs of one task file: each against the first, task by task (the "
                        "tasks each passes that the other does not, and an exact sign test)")
    p.add_argument("--model", help="a model dir (e.g. an SFT checkpoint) or asset:NAME")
    p.add_argument("--tasks", type=Path,
                   help="task JSONL in the recipes' format (e.g. recipes/tasks/distill/heldout.jsonl)")
    p.add_argument("--samples", type=int, default=1, metavar="K", help="sampled sessions per task (pass@K)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="the first N tasks of the file")
    p.add_argument("--seed", type=int, default=0, help="inference.random_seed (every call's sampling seed)")
    p.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the rows as JSON")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe value (repeatable; applied last)")
    p.add_argument("--runs-dir", type=Path, default=None, help="where the runs go (default: ./runs)")
    p.add_argument("--timeout", type=float, default=None, help="give up waiting for a run after this many seconds")
    p.set_defaults(func=run)


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    from polar_hpc.measure.checks import EvalInputError
    from polar_hpc.measure.eval import EvalReport, from_runs, run_eval, table, write_json

    if args.runs:
        if args.recipes or args.model or args.tasks:
            raise EvalInputError("eval --from RUN measures runs already made: give no RECIPE, --model or --tasks "
                                 "with it")
        if args.paired and len(args.runs) < 2:
            raise EvalInputError(f"eval --paired compares runs: give two or more --from RUN (got {len(args.runs)})")
        parts = [from_runs([run]) for run in args.runs] if args.paired else [from_runs(args.runs)]
        report = EvalReport(rows=[r for p in parts for r in p.rows], cut=[c for p in parts for c in p.cut])
    else:
        if args.paired:
            raise EvalInputError("eval --paired compares runs already made: give two or more --from RUN")
        missing = [name for name, value in (("RECIPE", args.recipes), ("--model", args.model),
                                            ("--tasks", args.tasks)) if not value]
        if missing:
            raise EvalInputError(f"eval needs {', '.join(missing)} (or --from RUN for a run already made)")
        report = run_eval(args.recipes, model=args.model, tasks=args.tasks, samples=args.samples, limit=args.limit,
                          seed=args.seed, overrides=args.overrides, runs_dir=args.runs_dir, timeout_s=args.timeout,
                          say=_say)
    sys.stdout.write(table(report) + "\n")
    if args.paired:
        from polar_hpc.measure.paired import compare, paired_table

        pairs = [pair for part in parts[1:] for pair in compare(parts[0].rows, part.rows)]
        if not pairs:
            raise EvalInputError("eval --paired: the runs share no task measured through the same harness")
        sys.stdout.write(paired_table(pairs) + "\n")
    if args.json is not None:
        write_json(report, args.json)
        sys.stdout.write(f"written to {args.json}\n")
    return 1 if report.cut else 0
