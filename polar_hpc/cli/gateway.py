"""``polar-hpc gateway``: run one gateway rank (proxy + stage pools + shard writer).

The rank serves the coordinator over the control plane (run both with ``polar-hpc launch``; the ``local`` backend
runs them as local processes). SIGTERM drains: no new work, in-flight sessions finish or are cut within
``gateway.drain_grace_s``, the shard is committed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("gateway", help="run one gateway rank (proxy, stage pools, shard writer)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True, help="the run's resolved config TOML (run_dir/config.toml)")
    p.add_argument("--rank", type=int, default=0, help="this rank's index (default 0)")
    p.add_argument("--run-dir", required=True, help="the run dir (shards/, endpoints/, sessions/ live there)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value (repeatable)")
    p.add_argument("--keep-session-dirs", action="store_true", help="keep each session's dir (debugging)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from polar_hpc.config import load_recipe

    cfg = load_recipe(args.config, args.overrides)
    from polar_hpc.gateway.main import run_rank
    from polar_hpc.gateway.waits import WaitFailed
    from polar_hpc.log import get_logger

    try:
        return asyncio.run(run_rank(cfg, args.rank, Path(args.run_dir), keep_session_dirs=args.keep_session_dirs))
    except WaitFailed as err:  # one line naming what did not come, not a traceback
        get_logger("gateway").error("%s", err)
        return 1
