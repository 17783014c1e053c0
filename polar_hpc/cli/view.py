"""``polar-hpc view RUN [--session KEY] [--out DIR]``. Light module: heavy imports happen inside ``run``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("view", help="write a static HTML viewer of a run's sessions (no server needed)")
    p.add_argument("run", metavar="RUN_DIR", help="run dir (or shard dir/file)")
    p.add_argument("--session", metavar="KEY", help="only this session's page (task_id/sample_index)")
    p.add_argument("--out", type=Path, help="output folder (default: RUN_DIR/view)")
    p.add_argument("--tokenizer", help="model dir, tokenizer.json or asset:NAME for token text "
                                       "(default: the run's model, from RUN_DIR/config.toml)")
    p.add_argument("--accept", type=float, default=1.0, help="a session is accepted when reward >= this")
    p.add_argument("--no-report", action="store_true", help="do not write the run report and its plots")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from polar_hpc.store.reader import EmptySelection, MissingShards
    from polar_hpc.view.model import load_tokenizer
    from polar_hpc.view.site import write_site

    out = args.out or Path(args.run) / "view"
    try:
        tok = load_tokenizer(args.tokenizer, Path(args.run))
        stats = write_site(args.run, out, session=args.session, tokenizer=tok, accept=args.accept,
                           report=not args.no_report)
    except (MissingShards, EmptySelection) as err:
        sys.stderr.write(f"polar-hpc view: {err}\n")
        return err.exit_code
    sys.stdout.write(f"{stats.sessions} sessions, {stats.bytes / 1e6:.1f} MB in {stats.seconds:.1f} s; "
                     f"open {stats.index}\n")
    return 0
