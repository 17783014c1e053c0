"""``polar-hpc images prepare RECIPE|TASKS``: plan (disk estimate first), then prepare or write a Slurm array."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from polar_hpc.images.prepare import ImageJob

GB = 1024**3


def add_parser(sub: argparse._SubParsersAction) -> None:
    prep = sub.add_parser("prepare", help="prepare every distinct image of a recipe's or a task file's tasks into "
                                          "the shared cache (SIF files for Apptainer, local images for podman/docker)")
    prep.add_argument("source", type=Path, help="a recipe (.toml) or a task file (.jsonl with an `image` field)")
    prep.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                      help="recipe override, as for launch (e.g. tasks.path=/data/swegym.jsonl)")
    prep.add_argument("--engine", choices=["apptainer", "podman", "docker"], default=None,
                      help="default: the recipe's runtime.backend (podman for a task file)")
    prep.add_argument("--cache", type=Path, default=None, help="default: runtime.image_cache (Apptainer)")
    prep.add_argument("--parallel", type=int, default=4)
    prep.add_argument("--estimate-gb", type=float, default=None, help="per-image size when none is known yet")
    prep.add_argument("--yes", action="store_true", help="go on even when the estimate exceeds the free disk")
    prep.add_argument("--index", type=int, default=None, help="only the image at this index (a Slurm array task)")
    prep.add_argument("--slurm-script", type=Path, default=None,
                      help="write an sbatch job-array script preparing the images on compute nodes, and stop")
    prep.add_argument("--submit", action="store_true", help="with --slurm-script: sbatch it")


def _jobs(source: Path, overrides: list[str]) -> tuple[list[ImageJob], str | None, str | None]:
    """(jobs, the recipe's engine, the recipe's image cache)."""
    from polar_hpc.images.prepare import jobs_from_rows

    if source.suffix == ".toml":
        from polar_hpc.config import load_recipe
        from polar_hpc.tasks.source import iter_tasks

        cfg = load_recipe(source, overrides)
        rows = [{"image": t.runtime.image} for t in iter_tasks(cfg) if t.runtime is not None]
        from polar_hpc.runtime import BACKENDS, backend

        engine = backend(cfg.runtime.backend).images_engine if cfg.runtime.backend in BACKENDS else None
        return jobs_from_rows(rows), engine, cfg.runtime.image_cache
    if not source.is_file():
        raise ValueError(f"{source}: no such file (expected a recipe .toml or a task .jsonl)")
    rows = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    return jobs_from_rows(rows), None, None


def run_prepare(args: argparse.Namespace) -> int:
    from polar_hpc.config import ConfigError
    from polar_hpc.images.base import local_cache
    from polar_hpc.images.prepare import DEFAULT_ESTIMATE_GB, plan, prepare, slurm_array_script

    try:
        jobs, engine, image_cache = _jobs(args.source, args.overrides)
    except (ValueError, json.JSONDecodeError, ConfigError) as err:
        sys.stderr.write(f"polar-hpc images prepare: {err}\n")
        return 2
    engine = args.engine or engine or "podman"
    cache = args.cache or (Path(image_cache) if image_cache else None)
    if cache is None:
        if engine == "apptainer":
            sys.stderr.write("polar-hpc images prepare: Apptainer needs a shared cache folder: --cache DIR or "
                             "runtime.image_cache in the recipe\n")
            return 2
        cache = local_cache() / "prepare"
    if not jobs:
        sys.stderr.write(f"polar-hpc images prepare: {args.source} names no images\n")
        return 2
    if args.index is not None:
        if not 0 <= args.index < len(jobs):
            sys.stderr.write(f"polar-hpc images prepare: --index {args.index} outside 0..{len(jobs) - 1}\n")
            return 2
        jobs = [jobs[args.index]]
    p = plan(engine, cache, jobs, estimate_gb=args.estimate_gb or DEFAULT_ESTIMATE_GB)
    sys.stdout.write(f"{len(jobs)} distinct images: {p.cached} cached, {len(p.todo)} to prepare; estimated "
                     f"{p.estimate_bytes / GB:.1f} GB, {p.free_bytes / GB:.1f} GB free in {cache}\n")
    if p.estimate_bytes > p.free_bytes and not args.yes:
        sys.stderr.write("polar-hpc images prepare: the estimate exceeds the free disk (--yes to go on)\n")
        return 2
    if args.slurm_script is not None:
        script = slurm_array_script(tasks=str(args.source.resolve()), cache=str(cache), count=len(jobs),
                                    parallel=args.parallel, overrides=args.overrides)
        (cache / "logs").mkdir(parents=True, exist_ok=True)  # sbatch does not create its output folder
        args.slurm_script.write_text(script)
        sys.stdout.write(f"wrote {args.slurm_script}: sbatch {args.slurm_script}\n")
        if args.submit:
            if shutil.which("sbatch") is None:
                sys.stderr.write("polar-hpc images prepare: --submit needs sbatch on PATH\n")
                return 2
            res = subprocess.run(["sbatch", str(args.slurm_script)], capture_output=True, text=True, timeout=60)
            sys.stdout.write(res.stdout)
            if res.returncode != 0:
                sys.stderr.write(res.stderr)
                return 1
        return 0
    manifest = prepare(engine, cache, jobs, parallel=args.parallel)
    by_ref = {j.ref: j for j in jobs}
    failed = [r for r in manifest.images.values() if r.status != "ok" and r.ref in by_ref]
    for rec in failed:
        tail = rec.log_tail.strip().splitlines()[-1:] or [""]
        own = by_ref[rec.ref].containerfile
        sys.stderr.write(f"failed: {rec.ref}{f' (built from {own})' if own else ''}: {tail[0]}\n")
    sys.stdout.write(f"manifest: {cache / 'manifest.json'}\n")
    return 1 if failed else 0
