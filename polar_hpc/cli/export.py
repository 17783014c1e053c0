"""``polar-hpc export sft``: a run's traces as an SFT corpus. Light module: heavy imports happen inside ``run``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    exp = subparsers.add_parser("export", help="export a run's traces as a training corpus")
    sub = exp.add_subparsers(dest="export_kind", metavar="KIND", required=True)
    sft = sub.add_parser("sft", help="chat-messages + token-level SFT corpus, split by task, with a dataset card")
    sft.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run dirs (or shard dirs/files), one per run")
    sft.add_argument("--out", required=True, type=Path, help="output folder")
    sft.add_argument("--format", choices=["jsonl", "parquet", "hf"], default="jsonl")
    sft.add_argument("--min-reward", type=float, help="keep sessions whose reward is >= this")
    sft.add_argument("--status", action="append", type=str.lower, choices=["completed", "timeout", "error"],
                     help="keep this session status (repeatable)")
    sft.add_argument("--harness", action="append", help="keep this harness (repeatable)")
    sft.add_argument("--repo", action="append", dest="repos", help="keep this repository (repeatable)")
    sft.add_argument("--min-policy-version", type=int)
    sft.add_argument("--max-policy-version", type=int)
    sft.add_argument("--include-untrainable", action="store_true",
                     help="also export traces the builder marked trainable=false (timeouts, unparsed tool calls)")
    sft.add_argument("--allow-empty", action="store_true",
                     help="exit 0 when nothing matches (default: exit 1 naming the filter)")
    sft.add_argument("--max-shard-mb", type=float, default=256.0, help="data files are split at this size")
    sft.add_argument("--test-fraction", type=float, default=0.1)
    sft.add_argument("--seed", type=int, default=0)
    sft.set_defaults(func=run)

def run(args: argparse.Namespace) -> int:
    from polar_hpc.store.reader import EmptySelection, MissingShards

    try:
        return _export(args)
    except (MissingShards, EmptySelection) as err:
        sys.stderr.write(f"polar-hpc {args.command}: {err}\n")
        return err.exit_code
    except FileExistsError as err:
        sys.stderr.write(f"polar-hpc {args.command}: {err}\n")
        return 2


def _export(args: argparse.Namespace) -> int:
    from polar_hpc.export.sft import export_sft, status_names
    from polar_hpc.store.select import TraceSelect

    select = TraceSelect(
        status=status_names(args.status), min_reward=args.min_reward,
        harness=tuple(args.harness) if args.harness else None,
        repos=frozenset(args.repos) if args.repos else None,
        min_policy_version=args.min_policy_version, max_policy_version=args.max_policy_version,
        trainable_only=not args.include_untrainable,
    )
    m = export_sft(args.runs, args.out, select=select, fmt=args.format, test_fraction=args.test_fraction,
                   seed=args.seed, allow_empty=args.allow_empty, max_shard_bytes=int(args.max_shard_mb * 2**20))
    for p in m.problems:
        sys.stderr.write(f"skipped: {p}\n")
    from polar_hpc.store.summary import format_runs

    runs = format_runs(m.sessions_per_run)
    sys.stdout.write(f"wrote {m.traces['train']} train / {m.traces['test']} test traces "
                     f"({m.tasks['train']} / {m.tasks['test']} tasks, {len(m.repos)} repositories) to {args.out}\n"
                     + (f"{runs}\n" if runs else ""))
    return 0
