"""``polar-hpc images prepare``: every distinct image of a task set, once, into a shared cache.

Apptainer: ``apptainer build <cache>/<name>.sif docker://REF`` (written under a temporary name, renamed when
done), the cache being ``runtime.image_cache`` on shared disk; the runtime then starts instances from the SIF.
Apptainer cannot be installed on the machines this is developed on: that path is tested on its exact command
lines. podman / docker: an image already in the engine's storage is kept, one with a build context (the offline
task set) is built from it, any other is pulled. Jobs run in parallel; a record per image (``records/<engine>/``,
merged into ``manifest.json``) holds its digest, size, seconds and, for a failure, its log tail; a rerun skips
what is done.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec

from polar_hpc.log import get_logger
from polar_hpc.util.fs import write_atomic

log = get_logger("images")

MANIFEST = "manifest.json"
ENGINES = ("apptainer", "podman", "docker")
DEFAULT_ESTIMATE_GB = 3.0
"""Per image, when nothing better is known (SWE-bench instance images are 1-5 GB as SIF files)."""
PREPARE_TIMEOUT_S = 3600
LOG_TAIL = 4000


class ImageJob(msgspec.Struct, frozen=True):
    ref: str
    """``docker://...`` or a local image name."""
    context: str | None = None
    """A build context folder (``COPY . /testbed`` onto ``base``), for images no registry has."""
    base: str | None = None
    containerfile: str | None = None
    """The image's own Dockerfile (a Harbor task's), built in ``context``; Apptainer builds its conversion."""


class ImageRecord(msgspec.Struct, kw_only=True):
    ref: str
    status: str
    """``ok`` or ``failed``."""
    path: str | None = None
    digest: str | None = None
    size_bytes: int | None = None
    seconds: float = 0.0
    log_tail: str = ""
    prepared_at: float = 0.0


class Manifest(msgspec.Struct, kw_only=True):
    engine: str
    images: dict[str, ImageRecord] = msgspec.field(default_factory=dict)


def bare_ref(ref: str) -> str:
    return ref.removeprefix("docker://")


def sif_name(ref: str) -> str:
    """File name of a ``docker://`` image's SIF in the cache: the reference with ``/`` and ``:`` made ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", bare_ref(ref)) + ".sif"


def sif_path(cache: str | Path, ref: str) -> Path:
    return Path(cache) / sif_name(ref)


def apptainer_argv(ref: str, out: Path, *, binary: str = "apptainer") -> list[str]:
    """``apptainer build --force OUT docker://REF`` (``OUT`` a temporary name next to the final SIF)."""
    return [binary, "build", "--force", str(out), f"docker://{bare_ref(ref)}"]


def apptainer_def_argv(definition: Path, out: Path, *, binary: str = "apptainer") -> list[str]:
    """``apptainer build --force OUT DEF``, run in the Dockerfile's context folder (its ``%files`` are relative)."""
    return [binary, "build", "--force", str(out), str(definition)]


def containerfile_build_argv(engine: str, ref: str, containerfile: Path, context: str) -> list[str]:
    """A task's own Dockerfile: its base images are pulled when missing (the engine's default policy)."""
    return [engine, "build", "-q", "-t", bare_ref(ref), "-f", str(containerfile), context]


def _missing_bases(engine: str, containerfile: Path) -> str:
    bases = [b for b in base_images(containerfile.read_text()) if b.lower() != "scratch"]
    missing = [b for b in bases if _inspect(engine, b) is None]
    if not missing:
        return ""
    return (f"\nbase image {', '.join(missing)} of {containerfile} is not in {engine}'s storage and could not be "
            f"pulled: load or build it first ({engine} load / {engine} build), or use a base this site has")


def pull_argv(engine: str, ref: str) -> list[str]:
    return [engine, "pull", bare_ref(ref)]


def build_argv(engine: str, ref: str, containerfile: Path, context: str) -> list[str]:
    pull = "--pull=never" if engine == "podman" else "--pull=false"
    return [engine, "build", "-q", pull, "-t", bare_ref(ref), "-f", str(containerfile), context]


def containerfile_text(base: str) -> str:
    return f"FROM {base}\nCOPY . /testbed\nWORKDIR /testbed\n"


def base_images(dockerfile: str) -> list[str]:
    """The images a Dockerfile builds on (``FROM`` lines; a stage named earlier is not an image)."""
    stages: set[str] = set()
    bases = []
    for m in re.finditer(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?", dockerfile, re.MULTILINE | re.IGNORECASE):
        if m.group(1).lower() not in stages:
            bases.append(m.group(1))
        if m.group(2):
            stages.add(m.group(2).lower())
    return bases


def apptainer_definition(containerfile: Path) -> str:
    """The Apptainer definition file spython writes for a Dockerfile (``apptainer build`` runs it in the context
    folder). Where it is not faithful: docs/tasks.md."""
    from spython.main.parse.parsers import DockerParser
    from spython.main.parse.writers import SingularityWriter

    return str(SingularityWriter(DockerParser(str(containerfile)).recipe).convert())


def _str(row: Mapping[str, Any], key: str) -> str | None:
    value = row.get(key)
    return value if isinstance(value, str) and value else None


def jobs_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[ImageJob]:
    """The distinct images of task rows (``image``, optional ``image_context`` / ``image_base`` /
    ``image_containerfile``), in order."""
    seen: dict[str, ImageJob] = {}
    for row in rows:
        ref = _str(row, "image")
        if ref and ref not in seen:
            seen[ref] = ImageJob(ref, _str(row, "image_context"), _str(row, "image_base"),
                                 _str(row, "image_containerfile"))
    return list(seen.values())


RECORDS = "records"
"""One JSON file per image under ``<cache>/records/<engine>/``: array tasks never write the same file."""


def load_manifest(cache: Path, engine: str) -> Manifest:
    """Every image record of this engine in the cache."""
    manifest = Manifest(engine=engine)
    folder = cache / RECORDS / engine
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            rec = msgspec.json.decode(path.read_bytes(), type=ImageRecord)
        except (msgspec.DecodeError, msgspec.ValidationError):
            log.warning("image record %s is not readable; the image will be prepared again", path)
            continue
        manifest.images[rec.ref] = rec
    return manifest


def save_record(cache: Path, engine: str, rec: ImageRecord) -> None:
    write_atomic(cache / RECORDS / engine / (sif_name(rec.ref) + ".json"), msgspec.json.encode(rec), 0o644)


def save_manifest(cache: Path, manifest: Manifest) -> None:
    """The merged manifest (``manifest.json``), for people and tools."""
    write_atomic(cache / MANIFEST, msgspec.json.format(msgspec.json.encode(manifest)), 0o644)


def _inspect(engine: str, ref: str) -> tuple[str, int] | None:
    res = subprocess.run([engine, "image", "inspect", "-f", "{{.Id}} {{.Size}}", bare_ref(ref)],
                         capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        return None
    ident, _, size = res.stdout.strip().partition(" ")
    return ident, int(size) if size.isdigit() else 0


def is_done(engine: str, cache: Path, job: ImageJob, manifest: Manifest) -> bool:
    if engine == "apptainer":
        rec = manifest.images.get(job.ref)
        return rec is not None and rec.status == "ok" and sif_path(cache, job.ref).is_file()
    return _inspect(engine, job.ref) is not None


def _run(argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> tuple[int, str]:
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=PREPARE_TIMEOUT_S,
                             env={**os.environ, **(env or {})}, cwd=cwd)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {PREPARE_TIMEOUT_S}s"
    except FileNotFoundError as err:
        return 127, str(err)
    return res.returncode, res.stdout + res.stderr


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return f"sha256:{h.hexdigest()}"


def prepare_one(engine: str, cache: Path, job: ImageJob, *, binary: str | None = None) -> ImageRecord:
    t0 = time.monotonic()
    if engine == "apptainer":
        final = sif_path(cache, job.ref)
        tmp = final.with_name(final.name + ".part")
        if job.containerfile is not None:
            definition = cache / "containerfiles" / (sif_name(job.ref) + ".def")
            definition.parent.mkdir(parents=True, exist_ok=True)
            definition.write_text(apptainer_definition(Path(job.containerfile)))
            rc, out = _run(apptainer_def_argv(definition, tmp, binary=binary or "apptainer"), cwd=job.context)
        else:
            rc, out = _run(apptainer_argv(job.ref, tmp, binary=binary or "apptainer"))
        if rc == 0 and tmp.is_file():
            tmp.rename(final)
            return ImageRecord(ref=job.ref, status="ok", path=str(final), digest=_sha256(final),
                               size_bytes=final.stat().st_size, seconds=time.monotonic() - t0, prepared_at=time.time())
        tmp.unlink(missing_ok=True)
        return ImageRecord(ref=job.ref, status="failed", seconds=time.monotonic() - t0, log_tail=out[-LOG_TAIL:],
                           prepared_at=time.time())
    if job.containerfile is not None:
        rc, out = _run(containerfile_build_argv(engine, job.ref, Path(job.containerfile), job.context or "."))
        if rc != 0:
            out += _missing_bases(engine, Path(job.containerfile))
    elif job.context is not None:
        cf = cache / "containerfiles" / (sif_name(job.ref) + ".Containerfile")
        cf.parent.mkdir(parents=True, exist_ok=True)
        cf.write_text(containerfile_text(job.base or "scratch"))
        rc, out = _run(build_argv(engine, job.ref, cf, job.context))
    else:
        rc, out = _run(pull_argv(engine, job.ref))
    info = _inspect(engine, job.ref) if rc == 0 else None
    if info is None:
        return ImageRecord(ref=job.ref, status="failed", seconds=time.monotonic() - t0, log_tail=out[-LOG_TAIL:],
                           prepared_at=time.time())
    return ImageRecord(ref=job.ref, status="ok", digest=info[0], size_bytes=info[1],
                       seconds=time.monotonic() - t0, prepared_at=time.time())


class Plan(msgspec.Struct, kw_only=True):
    todo: list[ImageJob]
    cached: int
    estimate_bytes: int
    free_bytes: int


def plan(engine: str, cache: Path, jobs: list[ImageJob], *, estimate_gb: float = DEFAULT_ESTIMATE_GB) -> Plan:
    """What is left to prepare and the disk it will take (known sizes from the manifest, else the estimate)."""
    manifest = load_manifest(cache, engine)
    todo = [j for j in jobs if not is_done(engine, cache, j, manifest)]
    known = [r.size_bytes for r in manifest.images.values() if r.status == "ok" and r.size_bytes]
    per = int(sum(known) / len(known)) if known else int(estimate_gb * 1024**3)
    cache.mkdir(parents=True, exist_ok=True)
    return Plan(todo=todo, cached=len(jobs) - len(todo), estimate_bytes=per * len(todo),
                free_bytes=shutil.disk_usage(cache).free)


def prepare(engine: str, cache: Path, jobs: list[ImageJob], *, parallel: int = 4,
            binary: str | None = None) -> Manifest:
    """Prepare ``jobs`` (those not done yet), ``parallel`` at once; the manifest is saved after each image."""
    if engine not in ENGINES:
        raise ValueError(f"engine: expected one of {', '.join(ENGINES)}, got {engine!r}")
    cache.mkdir(parents=True, exist_ok=True)
    manifest = load_manifest(cache, engine)
    todo = [j for j in jobs if not is_done(engine, cache, j, manifest)]
    for job in jobs:
        if job not in todo and job.ref not in manifest.images:
            info = _inspect(engine, job.ref) if engine != "apptainer" else None
            manifest.images[job.ref] = ImageRecord(ref=job.ref, status="ok", digest=info[0] if info else None,
                                                   size_bytes=info[1] if info else None, prepared_at=time.time())
            save_record(cache, engine, manifest.images[job.ref])
    with ThreadPoolExecutor(max_workers=max(1, parallel), thread_name_prefix="image-prepare") as pool:
        for rec in pool.map(lambda j: prepare_one(engine, cache, j, binary=binary), todo):
            manifest.images[rec.ref] = rec
            log.info("%s %s (%.1fs)", rec.status, rec.ref, rec.seconds)
            save_record(cache, engine, rec)
    save_manifest(cache, load_manifest(cache, engine))
    return manifest


def slurm_array_script(*, tasks: str, cache: str, count: int, parallel: int, partition: str | None = None,
                       time_min: int = 120, cpus: int = 4, mem_gb: int = 16, polar_hpc: str = "polar-hpc",
                       overrides: list[str] | None = None) -> str:
    """An sbatch script preparing image ``$SLURM_ARRAY_TASK_ID`` of ``tasks`` per array task, ``parallel`` at once
    (Apptainer builds on compute nodes into the shared cache)."""
    lines = ["#!/bin/bash", "#SBATCH --job-name=polar-images", f"#SBATCH --array=0-{count - 1}%{parallel}",
             f"#SBATCH --time={time_min}", f"#SBATCH --cpus-per-task={cpus}", f"#SBATCH --mem={mem_gb}G",
             f"#SBATCH --output={cache}/logs/%A_%a.out"]
    if partition:
        lines.append(f"#SBATCH --partition={partition}")
    lines += ["set -euo pipefail",
              "export APPTAINER_CACHEDIR=${APPTAINER_CACHEDIR:-${TMPDIR:-/tmp}/apptainer-$SLURM_JOB_ID}",
              f"exec {polar_hpc} images prepare {shlex.quote(tasks)} --engine apptainer --cache {shlex.quote(cache)} "
              + "".join(f"--set {shlex.quote(o)} " for o in overrides or [])
              + "--index \"$SLURM_ARRAY_TASK_ID\" --parallel 1 --yes"]
    return "\n".join(lines) + "\n"
