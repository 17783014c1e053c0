"""``polar-hpc report``: acceptance, rewards, turns, tokens and durations of runs (markdown + PNG plots). Light
module: heavy imports happen inside ``run``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from polar_hpc.config.run import ACCEPT_REWARD


def register(subparsers: Any) -> None:
    rep = subparsers.add_parser("report", help="acceptance, rewards, turns, tokens, durations of a run (md + PNG)")
    rep.add_argument("runs", nargs="+", metavar="RUN_DIR")
    rep.add_argument("--out", type=Path, help="output folder (default: RUN_DIR/report)")
    rep.add_argument("--accept", type=float, default=ACCEPT_REWARD,
                     help="a session is accepted when it completed with reward >= this")
    rep.add_argument("--no-plots", action="store_true")
    rep.add_argument("--allow-empty", action="store_true", help="exit 0 for runs without a session")
    rep.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from polar_hpc.report.run import write_report
    from polar_hpc.store.reader import EmptySelection, MissingShards

    out = args.out or Path(args.runs[0]) / "report"
    try:
        text = write_report(args.runs, out, accept=args.accept, plots=not args.no_plots, allow_empty=args.allow_empty)
    except (MissingShards, EmptySelection) as err:
        sys.stderr.write(f"polar-hpc {args.command}: {err}\n")
        return err.exit_code
    sys.stdout.write(text + f"\nwritten to {out}\n")
    return 0
