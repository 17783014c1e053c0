"""``polar-hpc tasks import swe-gym|swe-bench ROWS --out tasks.jsonl``; ``tasks import harbor DIR... --out``;
``tasks generate --out DIR`` (the CPU-sized bug-fix family with a held-out split)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import get_args

from polar_hpc.tasks import HARBOR, Dataset


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("tasks", help="import SWE-bench / SWE-Gym rows or Harbor task folders as task files")
    sub = parser.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)
    imp = sub.add_parser("import", help="rows (JSONL or Parquet, as `datasets` exports them) → task JSONL with "
                                        "published images, grading specs and gold patches; or Harbor task folders "
                                        "(Terminal-Bench style) → task JSONL with their Dockerfiles, tests and "
                                        "solve.sh")
    imp.add_argument("dataset", choices=[*get_args(Dataset), HARBOR])
    imp.add_argument("rows", type=Path, nargs="+", metavar="ROWS|DIR",
                     help="swe-bench / swe-gym: one rows file; harbor: task folders or folders of them")
    imp.add_argument("--out", type=Path, required=True)
    imp.add_argument("--namespace", default=None, help="image namespace (default: swebench / xingyaoww)")
    imp.add_argument("--limit", type=int, default=None)
    imp.set_defaults(func=run)
    off = sub.add_parser("build-offline", help="build the offline real-repository SWE task set (pinned PyPI sdists "
                                              "→ git repos → one local image each); prints its tasks.jsonl")
    off.add_argument("--out", type=Path, default=None, help="output folder (default: the image build cache)")
    off.add_argument("--engine", choices=["podman", "docker"], default="podman")
    off.add_argument("--force", action="store_true", help="rebuild even when up to date")
    off.set_defaults(func=run)
    from polar_hpc.tasks.family import DEFAULT_COUNTS, DEFAULT_SEED

    gen = sub.add_parser("generate", help="write a seeded family of small bug-fix repositories (one failing test "
                                          "each, a one-line sed as the reference solution): train.jsonl, "
                                          "heldout.jsonl (names and values no train task has) and repos/")
    gen.add_argument("--out", type=Path, required=True, help="output folder (new, empty, or generated before)")
    gen.add_argument("--seed", type=int, default=DEFAULT_SEED)
    gen.add_argument("--train", type=int, default=DEFAULT_COUNTS["train"], help="train tasks")
    gen.add_argument("--heldout", type=int, default=DEFAULT_COUNTS["heldout"], help="held-out tasks")
    gen.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.tasks_command == "build-offline":
        return _build_offline(args)
    if args.tasks_command == "generate":
        return _generate(args)
    if args.dataset == HARBOR:
        return _import_harbor(args)
    from polar_hpc.evaluate.swe_upstream import UpstreamUnavailable
    from polar_hpc.tasks.importer import TaskImportError, import_rows

    if len(args.rows) != 1:
        sys.stderr.write(f"polar-hpc tasks import {args.dataset}: expected one rows file, got {len(args.rows)}\n")
        return 2
    try:
        n = import_rows(args.dataset, args.rows[0], args.out, namespace=args.namespace, limit=args.limit)
    except (TaskImportError, UpstreamUnavailable) as err:
        sys.stderr.write(f"polar-hpc tasks import: {err}\n")
        return err.exit_code
    sys.stdout.write(f"{n} tasks → {args.out}\n")
    return 0


def _import_harbor(args: argparse.Namespace) -> int:
    from polar_hpc.tasks.harbor import HarborError, import_harbor

    try:
        n = import_harbor(args.rows, args.out)
    except HarborError as err:
        sys.stderr.write(f"polar-hpc tasks import harbor: {err}\n")
        return err.exit_code
    sys.stdout.write(f"{n} tasks → {args.out}; build their images: polar-hpc images prepare {args.out}\n")
    return 0


def _build_offline(args: argparse.Namespace) -> int:
    from polar_hpc.images.base import ImageBuildError
    from polar_hpc.tasks.offline import BuildError, build

    try:
        path = build(args.out, engine=args.engine, force=args.force)
    except (BuildError, ImageBuildError) as err:
        sys.stderr.write(f"polar-hpc tasks build-offline: {err}\n")
        return err.exit_code
    sys.stdout.write(f"{path}\n")
    return 0


def _generate(args: argparse.Namespace) -> int:
    from polar_hpc.tasks.generate import GenerateError, generate

    try:
        done = generate(args.out, seed=args.seed, train=args.train, heldout=args.heldout)
    except GenerateError as err:
        sys.stderr.write(f"polar-hpc {err}\n")
        return err.exit_code
    sys.stdout.write(f"{done.counts['train']} train + {done.counts['heldout']} held-out tasks (seed {done.seed}) → "
                     f"{args.out}/train.jsonl, {args.out}/heldout.jsonl, {args.out}/repos/\n")
    return 0
