"""``polar-hpc coordinator``: the run's coordinator process (light module: heavy imports happen in ``run``)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "coordinator", help="run the coordinator: dispatch sessions to gateway ranks, stream results",
        description="Serve the run's control plane (ZeroMQ ROUTER, CURVE keys in RUN_DIR/secrets). Tasks come from "
                    "the recipe's task file and/or clients; state is rebuilt from RUN_DIR/shards on restart.",
    )
    p.add_argument("--config", required=True, help="resolved run config (RUN_DIR/config.toml)")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--host", default=None, help="address to bind and publish (default: this host's name)")
    p.add_argument("--port", type=int, default=None, help="default: the previous port of this run, else random")
    p.add_argument("--serve", action="store_true",
                   help="keep serving after the recipe's tasks finish (default: exit when a task file is done)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import asyncio
    import signal
    from pathlib import Path

    from polar_hpc.config import load_recipe
    from polar_hpc.coordinator.server import Coordinator
    from polar_hpc.tasks.source import iter_tasks

    cfg = load_recipe(args.config)
    tasks = list(iter_tasks(cfg))
    coord = Coordinator(cfg, Path(args.run_dir), host=args.host, port=args.port, tasks=tasks,
                        exit_when_done=bool(tasks) and not args.serve)

    async def main() -> int:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, coord.stop)
        return await coord.run()

    return asyncio.run(main())
