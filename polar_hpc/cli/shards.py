"""``polar-hpc shards inspect|validate|export|show``; ``logprobs`` is ``polar_hpc.cli.shards_logprobs``'s.
Light module: h5py/numpy are imported inside ``run``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from polar_hpc.cli.shards_logprobs import add_parser as add_logprobs_parser


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("shards", help="inspect, validate and export HDF5 trajectory shards")
    sub = p.add_subparsers(dest="shards_command", metavar="ACTION", required=True)
    paths_help = "shard files, shard directories, or run directories (their shards/ folder)"

    ins = sub.add_parser("inspect", help="summary: sessions, traces, tokens, statuses, rewards, harnesses")
    ins.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    ins.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_filters(ins)
    ins.add_argument("--allow-empty", action="store_true", help="exit 0 when no session matches")
    ins.set_defaults(func=run)

    show = sub.add_parser("show", help="print one session: conversation, tool calls, token view, evaluation")
    show.add_argument("key", metavar="KEY", help="session key (task_id/sample_index)")
    show.add_argument("paths", nargs="*", default=["."], metavar="PATH", help=paths_help + " (default: .)")
    show.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    show.add_argument("--tokenizer", help="model dir, tokenizer.json or asset:NAME for token text "
                                          "(default: the run's model, from RUN/config.toml)")
    show.set_defaults(func=run)

    val = sub.add_parser("validate", help="check schema and invariants; exit 1 naming each violation")
    val.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    val.set_defaults(func=run)

    exp = sub.add_parser("export", help="write raw trace fields (token level) as JSONL or Parquet")
    exp.add_argument("paths", nargs="+", metavar="PATH", help=paths_help)
    exp.add_argument("--format", choices=["jsonl", "parquet"], default="jsonl")
    exp.add_argument("--out", required=True, type=Path, help="output file")
    _add_filters(exp)
    exp.add_argument("--allow-empty", action="store_true", help="exit 0 when no trace matches")
    exp.set_defaults(func=run)

    add_logprobs_parser(sub, _add_filters)


def _add_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--status",
        action="append",
        type=str.lower,
        choices=["completed", "timeout", "error"],
        help="keep this status (repeatable)",
    )
    p.add_argument("--min-reward", type=float, help="keep sessions whose reward is >= this")
    p.add_argument("--harness", action="append", help="keep this harness (repeatable)")
    p.add_argument("--task-id", action="append", dest="task_ids", help="keep this task id (repeatable)")


def _filter(args: argparse.Namespace) -> Any:
    from polar_hpc.store.select import TraceSelect
    from polar_hpc.wire.traces import TraceStatus

    if not (args.status or args.min_reward is not None or args.harness or args.task_ids):
        return None
    return TraceSelect(
        status=tuple(TraceStatus[s.upper()] for s in args.status) if args.status else None,
        min_reward=args.min_reward,
        harness=tuple(args.harness) if args.harness else None,
        task_ids=frozenset(args.task_ids) if args.task_ids else None,
    )


def _fail(args: argparse.Namespace, message: str, code: int) -> int:
    sys.stderr.write(f"polar-hpc shards {args.shards_command}: {message}\n")
    return code


def _describe(args: argparse.Namespace) -> str:
    conds = [f"status={','.join(args.status)}" if args.status else "",
             f"min_reward={args.min_reward:g}" if args.min_reward is not None else "",
             f"harness={','.join(args.harness)}" if args.harness else "",
             f"task_id={','.join(args.task_ids)}" if args.task_ids else ""]
    text = " ".join(c for c in conds if c)
    return f"the filter {text}" if text else "no filter"


def run(args: argparse.Namespace) -> int:
    cmd = args.shards_command
    if cmd == "validate":
        return _validate(args)
    from polar_hpc.store.reader import MissingShards, ShardReader

    try:
        reader = ShardReader(args.paths, must_exist=True)
    except MissingShards as err:
        return _fail(args, str(err), err.exit_code)
    if cmd == "show":
        from polar_hpc.view.model import load_tokenizer
        from polar_hpc.view.text import show_session

        tok = load_tokenizer(args.tokenizer, Path(args.paths[0]) if len(args.paths) == 1 else None)
        return show_session(reader, args.key, sys.stdout, color=args.color, tokenizer=tok)
    if cmd == "inspect":
        import msgspec

        from polar_hpc.store.summary import format_summary, summarize

        s = summarize(reader, _filter(args))
        sys.stdout.write((msgspec.json.encode(s).decode() if args.json else format_summary(s)) + "\n")
        if not s.sessions and not args.allow_empty:
            return _fail(args, f"no session in {len(reader.shards)} shards under {' '.join(args.paths)} matches "
                         f"{_describe(args)}", 1)
        return 0
    from polar_hpc.export.shards import export_jsonl, export_parquet
    from polar_hpc.store.summary import format_runs, sessions_per_run

    export = export_parquet if args.format == "parquet" else export_jsonl
    n = export(reader, _filter(args), args.out)
    for p in reader.problems:
        sys.stderr.write(f"skipped: {p}\n")
    runs = format_runs(sessions_per_run(reader, _filter(args), with_traces=True))
    sys.stdout.write(f"wrote {n} traces to {args.out}\n" + (f"{runs}\n" if runs else ""))
    if not n and not args.allow_empty:
        return _fail(args, f"no trace in {len(reader.shards)} shards under {' '.join(args.paths)} matches "
                     f"{_describe(args)}", 1)
    return 0


def _validate(args: argparse.Namespace) -> int:
    from polar_hpc.store.validate import validate_paths

    files, violations = validate_paths(args.paths)
    for v in violations:
        sys.stdout.write(f"{v}\n")
    bad = len({v.file for v in violations})
    sys.stdout.write(f"{files} shards checked, {bad} with violations, {len(violations)} violations\n")
    return 1 if violations else 0
