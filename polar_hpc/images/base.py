"""A local base image built without any registry: a ``minbase`` Debian (``mmdebstrap``, which writes the tarball
itself at half debootstrap's CPU; ``debootstrap`` where it is missing) plus the packages an offline SWE task needs
(python3, pytest, git, patch), imported into podman or docker.

The root filesystem tarball is cached (``<cache>/<name>.tar``), so a rebuild for another engine or after the
engine's storage was wiped costs only the import."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from polar_hpc.errors import PolarError
from polar_hpc.log import get_logger

log = get_logger("images")

SWE_BASE_IMAGE = "localhost/polar-hpc/swe-base:bookworm"
SWE_BASE_PACKAGES = ("python3", "python3-pytest", "git", "patch")
DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BUILD_TIMEOUT_S = 1200
CACHE_ENV = "POLAR_HPC_IMAGE_BUILD_CACHE"


def local_cache() -> Path:
    """Where root filesystem tarballs and build contexts are kept: ``$POLAR_HPC_IMAGE_BUILD_CACHE`` or
    ``~/.cache/polar-hpc/image-build``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "polar-hpc" / "image-build"


class ImageBuildError(PolarError, RuntimeError):
    """An image could not be built; the message names the step and carries its output's tail."""

    exit_code = 1


def image_exists(engine: str, name: str) -> bool:
    res = subprocess.run([engine, "image", "inspect", name], capture_output=True, timeout=60)
    return res.returncode == 0


def _run(argv: list[str], what: str, **kw: Any) -> None:
    res = subprocess.run(argv, capture_output=True, timeout=BUILD_TIMEOUT_S, **kw)
    if res.returncode != 0:
        tail = (res.stderr or b"").decode(errors="replace").strip()[-1500:]
        raise ImageBuildError(f"{what}: `{' '.join(argv[:4])} ...` exited {res.returncode}: {tail}")


def rootfs_tarball(cache_dir: Path, packages: tuple[str, ...] = SWE_BASE_PACKAGES, *, suite: str = DEBIAN_SUITE,
                   mirror: str = DEBIAN_MIRROR) -> Path:
    """The cached minbase root filesystem with ``packages``, built once (needs root, and mmdebstrap or debootstrap)."""
    key = hashlib.sha256(f"{suite} {' '.join(sorted(packages))}".encode()).hexdigest()[:12]
    tar = cache_dir / f"rootfs-{suite}-{key}.tar"
    if tar.is_file():
        return tar
    cache_dir.mkdir(parents=True, exist_ok=True)
    part = tar.with_suffix(".tar.part")
    if shutil.which("mmdebstrap") is not None:
        log.info("mmdebstrap %s (%s) into %s", suite, ", ".join(packages), part)
        _run(["mmdebstrap", "--variant=minbase", f"--include={','.join(packages)}", "--format=tar", "--quiet", suite,
              str(part), mirror], "mmdebstrap")
        part.rename(tar)
        return tar
    if shutil.which("debootstrap") is None:
        raise ImageBuildError("building a base image needs mmdebstrap or debootstrap (apt-get install mmdebstrap)")
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix="rootfs-") as tmp:
        root = Path(tmp) / "root"
        log.info("debootstrap %s (%s) into %s", suite, ", ".join(packages), root)
        _run(["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", suite, str(root), mirror],
             "debootstrap")
        (root / "tmp").chmod(0o1777)  # a --tmpfs /tmp or a bound /tmp takes the image's mode
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (root / junk).glob("*"):
                if p.is_file():
                    p.unlink()
        _run(["tar", "-C", str(root), "-cf", str(part), "."], "tar")
        part.rename(tar)
    return tar


def build_base_image(engine: str, cache_dir: Path, *, name: str = SWE_BASE_IMAGE, force: bool = False) -> str:
    """``name`` in the engine's local storage (idempotent: kept when it exists, unless ``force``)."""
    if not force and image_exists(engine, name):
        log.info("%s: %s is there", engine, name)
        return name
    tar = rootfs_tarball(cache_dir)
    log.info("%s import %s as %s", engine, tar, name)
    _run([engine, "import", str(tar), name], f"{engine} import")
    return name
