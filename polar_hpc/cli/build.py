"""``polar-hpc build RECORDS... --builder NAME [--evaluator NAME] --out DIR``: rebuild shards offline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from polar_hpc.config.run import BuilderSpec


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "build", help="rebuild trajectories from saved completion records into a shard",
        description="Turn completion records (JSONL, as the proxy writes them) into trajectories with another "
                    "builder, optionally evaluate them, and write one HDF5 shard.")
    p.add_argument("records", nargs="+", type=Path, metavar="RECORDS", help="JSONL files of CompletionRecords")
    p.add_argument("--builder", default=BuilderSpec().name,
                   help="per_request, prefix_merging or module:Class (default: %(default)s, as builder.name)")
    p.add_argument("--include-side-requests", action="store_true", default=BuilderSpec().include_side_requests)
    p.add_argument("--eot", type=int, default=None, help="end-of-turn token id (default: from --tokenizer, "
                                                          "else the last token of the first stopped reply)")
    p.add_argument("--tokenizer", type=Path, default=None, help="model/tokenizer dir to take the end-of-turn id from")
    p.add_argument("--status", choices=["completed", "timeout", "error"], default="completed")
    p.add_argument("--evaluator", default=None, help="session_completed, command, swebench or module:Class")
    p.add_argument("--eval-command", default=None, help="command for the 'command' evaluator")
    p.add_argument("--runtime", choices=["local", "bwrap"], default=None,
                   help="backend of the fresh runtime an evaluator may start")
    p.add_argument("--out", required=True, type=Path, help="shard directory (created)")
    p.add_argument("--rank", type=int, default=0, help="writer rank in the shard file name")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from polar_hpc.config.run import EvaluatorSpec, RuntimeSpec, ShardConfig
    from polar_hpc.postrun.offline import rebuild
    from polar_hpc.store.writer import ShardWriter
    from polar_hpc.wire.traces import TraceStatus

    for path in args.records:
        if not path.is_file():
            sys.stderr.write(f"polar-hpc build: {path}: no such records file\n")
            return 2
    eot = args.eot
    if eot is None and args.tokenizer is not None:
        from polar_hpc.chat.template import ChatTemplate

        eot = ChatTemplate.from_model_dir(args.tokenizer).end_of_turn_id
    evaluator = None
    if args.evaluator:
        evaluator = EvaluatorSpec(name=args.evaluator, command=args.eval_command)
    results = rebuild(list(args.records), BuilderSpec(name=args.builder,
                                                      include_side_requests=args.include_side_requests),
                      evaluator=evaluator, end_of_turn_id=eot, status=TraceStatus[args.status.upper()],
                      runtime=RuntimeSpec(backend=args.runtime) if args.runtime else None)
    writer = ShardWriter(args.out, args.rank, ShardConfig(max_sessions=1 << 30, max_bytes=1 << 62, max_age_s=1e12),
                         producer={"tool": "polar-hpc build", "builder": args.builder})
    for r in results:
        writer.add(r)
    path = writer.close()
    traces = sum(len(r.trajectory.traces) for r in results)
    sys.stdout.write(f"{len(results)} sessions, {traces} traces -> {path}\n")
    return 0
