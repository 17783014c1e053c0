"""Submit a run's components through submitit: Slurm jobs (inference servers, coordinator, gateway array) or the
same jobs as local processes. ``--dry-run`` renders the exact sbatch scripts instead."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import submitit
from submitit.slurm.slurm import _make_sbatch_string

from polar_hpc.config import ConfigError, RunConfig, SlurmResources, decode
from polar_hpc.launch.budget import signal_delay_s, stop_grace_s
from polar_hpc.launch.jobs import ComponentJob
from polar_hpc.launch.resubmit import Resubmitter
from polar_hpc.log import get_logger
from polar_hpc.util.proc import start_time
from polar_hpc.wire.endpoints import remove_endpoint
from polar_hpc.wire.rundir import Component, JobRecord, JobsFile, RunDir, component_name

log = get_logger("launch")

SITES_DIR = Path(__file__).resolve().parents[2] / "slurm" / "sites"
_OPTIONAL = ("partition", "account", "qos", "constraint", "mem_gb")


def site_path(name: str, sites_dir: Path = SITES_DIR, recipe_dir: str | None = None) -> Path:
    """A site file by path (``/shared/lab/site.toml``, ``sites/x.toml`` relative to the recipe) or by name
    (``slurm/sites/<name>.toml`` of the checkout)."""
    if name.endswith(".toml") or "/" in name:
        p = Path(name).expanduser()
        return p if p.is_absolute() else Path(recipe_dir or ".") / p
    return sites_dir / f"{name}.toml"


def load_site(name: str, sites_dir: Path = SITES_DIR,
              recipe_dir: str | None = None) -> dict[Component | str, SlurmResources]:
    """A site file (:func:`site_path`): tables ``[all]``, ``[inference]``, ``[coordinator]``, ``[gateway]``."""
    path = site_path(name, sites_dir, recipe_dir)
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in sites_dir.glob("*.toml"))) or "none"
        raise ConfigError(f"launch.site = {name!r}: no site file {path} (known sites: {known}; or give a path to "
                          "a .toml file)")
    data = tomllib.loads(path.read_text())
    out: dict[Component | str, SlurmResources] = {}
    for key, table in data.items():
        if key not in ("all", "inference", "coordinator", "gateway"):
            raise ConfigError(f"{path}: unknown table [{key}] (valid: all, inference, coordinator, gateway)")
        out[key] = decode(table, SlurmResources, source=f"{path} [{key}]")
    return out


def with_site(res: SlurmResources, site: dict[Component | str, SlurmResources], component: Component) -> SlurmResources:
    for layer in (site.get(component), site.get("all")):
        if layer is None:
            continue
        changes: dict[str, Any] = {f: getattr(layer, f) for f in _OPTIONAL if getattr(res, f) is None}
        changes["extra"] = {**layer.extra, **res.extra}
        res = msgspec.structs.replace(res, **{k: v for k, v in changes.items() if v is not None})
    return res


def slurm_parameters(res: SlurmResources, name: str, run: RunDir, cfg: RunConfig) -> dict[str, Any]:
    params: dict[str, Any] = {
        "job_name": name,
        # queued jobs run the run's frozen copy of the code, not the live checkout
        "setup": [f"export PYTHONPATH={shlex.quote(str(run.code))}${{PYTHONPATH:+:$PYTHONPATH}}"],
        "time": res.time_min,
        "nodes": res.nodes,
        "cpus_per_task": res.cpus_per_task,
        "gpus_per_node": res.gpus_per_node,
        # launch.requeue: on preemption or timeout the job checkpoints and is requeued (False: it just ends)
        "additional_parameters": {("requeue" if cfg.launch.requeue else "no_requeue"): True, **res.extra},
        # USR2 this long before the time limit: drain + shard commit + requeue all fit (see launch/jobs.py)
        "signal_delay_s": signal_delay_s(cfg),
        "stderr_to_stdout": True,
    }
    for key in ("partition", "account", "qos", "constraint"):
        if getattr(res, key) is not None:
            params[key] = getattr(res, key)
    if res.mem_gb is not None:
        params["mem"] = f"{int(res.mem_gb * 1024)}MB"
    return params


def component_resources(cfg: RunConfig) -> dict[Component, SlurmResources]:
    res: dict[Component, SlurmResources] = {
        "inference": cfg.inference.resources,
        "coordinator": cfg.coordinator.resources,
        "gateway": cfg.gateway.resources,
    }
    if cfg.launch.site:
        site = load_site(cfg.launch.site, recipe_dir=cfg.recipe_dir)
        res = {c: with_site(r, site, c) for c, r in res.items()}
    return res


def planned_jobs(cfg: RunConfig) -> list[tuple[Component, int]]:
    jobs: list[tuple[Component, int]] = []
    if cfg.inference.engine != "external":
        jobs += [("inference", i) for i in range(cfg.inference.num_servers)]
    jobs.append(("coordinator", 0))
    jobs += [("gateway", r) for r in range(cfg.gateway.num_ranks)]
    return jobs


@contextlib.contextmanager
def clean_slurm_env() -> Iterator[None]:
    """Hide the submitting job's SLURM_*/SUBMITIT_* variables (launching from inside an allocation must not leak
    them into the new jobs) but keep SLURM_CONF, which says where the cluster's configuration lives."""
    keep = {"SLURM_CONF"}
    hidden = {k: os.environ.pop(k) for k in list(os.environ)
              if k.startswith(("SLURM_", "SLURMD_", "SBATCH_", "SRUN_", "SUBMITIT_")) and k not in keep}
    try:
        yield
    finally:
        os.environ.update(hidden)


@contextlib.contextmanager
def detached_children(log_path: Path) -> Iterator[None]:
    """Local backend: job controllers must not hold the launcher's stdout/stderr (a caller reading them would wait
    for the whole run) nor die with a Ctrl-C in the launcher's terminal. While submitting, stdio points at the run's
    launcher log and SIGINT is ignored; children inherit both."""
    import signal
    import sys

    log_path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    null = os.open(os.devnull, os.O_RDONLY)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        yield
    finally:
        for fd, copy in zip((0, 1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(null)
        os.close(log)
        signal.signal(signal.SIGINT, previous)


def render_sbatch(cfg: RunConfig, run: RunDir) -> dict[str, str]:
    """The sbatch scripts submitit would submit, one per component (the gateway one is an array)."""
    res = component_resources(cfg)
    scripts: dict[str, str] = {}
    python = shlex.quote(sys.executable)
    for component in ("inference", "coordinator", "gateway"):
        if component == "inference" and cfg.inference.engine == "external":
            continue
        folder = run.job_logs(component)
        params = slurm_parameters(res[component], f"{cfg.name}-{component}", run, cfg)
        if component == "gateway" and cfg.gateway.num_ranks > 1:
            params["map_count"] = cfg.gateway.num_ranks
            params["array_parallelism"] = cfg.gateway.num_ranks
        command = f"{python} -u -m submitit.core._submit {shlex.quote(str(folder))}"
        scripts[component] = _make_sbatch_string(command=command, folder=folder, **params)
    return scripts


def _executor(cfg: RunConfig, run: RunDir, component: Component, res: SlurmResources) -> submitit.Executor:
    folder = run.job_logs(component)
    if cfg.launch.backend == "slurm":
        ex: submitit.Executor = submitit.SlurmExecutor(folder=folder, max_num_timeout=3)
        params = slurm_parameters(res, f"{cfg.name}-{component}", run, cfg)
        if component == "gateway":
            params["array_parallelism"] = max(1, cfg.gateway.num_ranks)
        ex.update_parameters(**params)
    else:
        ex = submitit.LocalExecutor(folder=folder, max_num_timeout=3)
        ex.update_parameters(timeout_min=res.time_min, stderr_to_stdout=True)
    return ex


def submit_run(cfg: RunConfig, run: RunDir, only: set[tuple[Component, int]] | None = None,
               lost: dict[tuple[Component, int], str] | None = None) -> JobsFile:
    """Submit every component (or only the given ones, for resume). Returns the ledger, also written to jobs.json.

    ``lost``: the run's monitor resubmits these (component, index) -> how their job ended: the new records count
    the resubmission on top of the old ones' (a plain submission starts the count again)."""
    res = component_resources(cfg)
    ledger = run.read_jobs() or JobsFile(backend=cfg.launch.backend)
    wanted = [j for j in planned_jobs(cfg) if only is None or j in only]
    by_component: dict[Component, list[int]] = {}
    for component, index in wanted:
        by_component.setdefault(component, []).append(index)
    local = cfg.launch.backend == "local"
    with clean_slurm_env(), detached_children(run.launcher_log) if local else contextlib.nullcontext():
        for component in ("inference", "coordinator", "gateway"):
            indices = by_component.get(component, [])
            if not indices:
                continue
            if component == "inference":  # a dead server's endpoint must not be mistaken for the new one
                for i in indices:
                    remove_endpoint(run.root, component_name(component, i))
            ex = _executor(cfg, run, component, res[component])
            # the coordinator's job hosts the run's monitor of lost jobs (Slurm: resubmits them)
            watch = Resubmitter(str(run.root), submit_run) if component == "coordinator" and not local else None
            bodies = [ComponentJob(str(run.root), component, i, stop_grace_s(cfg), requeue=cfg.launch.requeue,
                                   watch=watch) for i in indices]
            if len(bodies) > 1 and cfg.launch.backend == "slurm":
                jobs = ex.submit_array(bodies)
            else:
                jobs = [ex.submit(b) for b in bodies]
            for index, job in zip(indices, jobs, strict=True):
                folder = str(run.job_logs(component, str(job.job_id)))
                old = next((j for j in ledger.jobs if j.component == component and j.index == index), None)
                ledger.jobs = [j for j in ledger.jobs if not (j.component == component and j.index == index)]
                record = JobRecord(component=component, index=index, job_id=str(job.job_id),
                                   backend=cfg.launch.backend, folder=folder, submitted_at=time.time(),
                                   pid_start=start_time(int(job.job_id)) if local else None)
                if lost is not None and (component, index) in lost and old is not None:
                    record.resubmits = old.resubmits + 1
                    record.lost_job = old.job_id
                    record.lost_state = lost[(component, index)]
                ledger.jobs.append(record)
                log.info("submitted %s-%d as job %s", component, index, job.job_id)
    run.write_jobs(ledger)
    return ledger
