"""``polar-hpc images build-base`` (the local base image offline SWE tasks build on, no registry needed) and
``images prepare`` (:mod:`polar_hpc.cli.images_prepare`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def default_cache() -> Path:
    from polar_hpc.images.base import local_cache

    return local_cache()


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("images", help="prepare the per-task images of a task set (SIF files, local images)")
    sub = parser.add_subparsers(dest="images_command", metavar="ACTION", required=True)
    base = sub.add_parser("build-base",
                          help="a minbase Debian (mmdebstrap or debootstrap; python3, pytest, git, patch) "
                               "imported into podman or docker (idempotent)")
    base.add_argument("--engine", choices=["podman", "docker"], default="podman")
    base.add_argument("--name", default=None, help="image name (default: the SWE base image tests and recipes use)")
    base.add_argument("--cache", type=Path, default=None, help="where the root filesystem tarball is kept")
    base.add_argument("--force", action="store_true", help="import again even when the image exists")
    base.set_defaults(func=run)
    from polar_hpc.cli.images_prepare import add_parser

    add_parser(sub)
    sub.choices["prepare"].set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from polar_hpc.images.base import SWE_BASE_IMAGE, ImageBuildError, build_base_image

    if args.images_command == "prepare":
        from polar_hpc.cli.images_prepare import run_prepare

        return run_prepare(args)
    try:
        if args.images_command == "build-base":
            name = build_base_image(args.engine, args.cache or default_cache(), name=args.name or SWE_BASE_IMAGE,
                                    force=args.force)
            sys.stdout.write(f"{name}\n")
            return 0
    except ImageBuildError as err:
        sys.stderr.write(f"polar-hpc images: {err}\n")
        return err.exit_code
    return 2
