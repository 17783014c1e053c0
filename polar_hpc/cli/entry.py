"""``polar-hpc`` command line. Subcommands live in light ``*_cli`` modules that import heavy code lazily.

Each subcommand module defines ``register(subparsers)`` which adds its parser(s) and sets
``func=run`` where ``run(args) -> int``. Keep those modules free of numpy/h5py/torch imports at top level:
``polar-hpc --help`` must start fast on a login node.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from polar_hpc import __version__

# Order is the order shown in --help.
SUBCOMMAND_MODULES = [
    "polar_hpc.cli.launch",
    "polar_hpc.cli.coordinator",
    "polar_hpc.cli.gateway",
    "polar_hpc.cli.serve",
    "polar_hpc.cli.proxy",
    "polar_hpc.cli.build",
    "polar_hpc.cli.shards",
    "polar_hpc.cli.export",
    "polar_hpc.cli.train",
    "polar_hpc.cli.report",
    "polar_hpc.cli.view",
    "polar_hpc.cli.assets",
    "polar_hpc.cli.images",
    "polar_hpc.cli.tasks",
    "polar_hpc.cli.probe",
    "polar_hpc.cli.eval",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="polar-hpc",
        description="Run agent harnesses unchanged on Slurm; record token-faithful trajectories into HDF5 shards.",
    )
    parser.add_argument("--version", action="version", version=f"polar-hpc {__version__}")
    parser.add_argument("--log-level", default=None, help="DEBUG, INFO (default), WARNING, ERROR")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name == name:
                continue  # subcommand not built yet
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from polar_hpc.errors import PolarError
    from polar_hpc.log import setup_logging

    setup_logging(args.log_level)
    try:
        return int(args.func(args) or 0)
    except FileNotFoundError as err:  # a run dir, shard or file given on the command line (MissingShards too)
        sys.stderr.write(f"polar-hpc {args.command}: {err}\n")
        return 2
    except PolarError as err:
        sys.stderr.write(f"polar-hpc: {err}\n")
        return err.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
