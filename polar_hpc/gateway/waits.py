"""Waits for other components' endpoints that see Slurm: while what we wait for is still queued, we keep
waiting; when its job failed or was cancelled, we stop at once, naming it; the deadline only counts time in which
it could have published (its job running, or its state unknown).

What a wait is waiting for is logged when it changes (and once a minute) and published in
``waits/<component>.json`` for ``polar-hpc status``. The job of each endpoint comes from the run's ledger
(``jobs.json``, written by the launcher); cancelling the awaiting task ends the wait at once (SIGTERM).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from polar_hpc.errors import PolarError
from polar_hpc.log import get_logger
from polar_hpc.util import proc
from polar_hpc.util.slurm import JobInfo, job_infos
from polar_hpc.wire.endpoints import Endpoint, read_endpoint
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.waits import WaitRecord, clear_wait, write_wait

log = get_logger("gateway.waits")

POLL_S = 0.5
STATE_POLL_S = 10.0
"""How often Slurm is asked (sacct is a call to the controller: not every poll)."""
LOG_EVERY_S = 60.0


class WaitFailed(PolarError, RuntimeError):
    """What we waited for cannot come any more: its job ended without publishing, or the deadline passed."""

    exit_code = 1


class JobWatch:
    """The state of the run's components' jobs, as the ledger names them (``None``: not known, e.g. no ledger)."""

    def __init__(self, run_dir: Path, state_poll_s: float = STATE_POLL_S) -> None:
        self.run_dir = run_dir
        self.state_poll_s = state_poll_s
        self._infos: dict[str, JobInfo] = {}
        self._backends: dict[str, str] = {}
        self._asked = 0.0

    def _ledger(self) -> dict[str, tuple[str, str, int | None]]:
        try:
            jobs = RunDir(self.run_dir).read_jobs()
        except (OSError, ValueError):
            return {}
        if jobs is None:
            return {}
        return {j.name: (j.job_id, j.backend, j.pid_start) for j in jobs.jobs}

    def refresh(self, names: list[str]) -> None:
        now = time.monotonic()
        if now - self._asked < self.state_poll_s and all(n in self._infos for n in names):
            return
        self._asked = now
        ledger = {n: v for n, v in self._ledger().items() if n in names}
        slurm = [job_id for job_id, backend, _ in ledger.values() if backend == "slurm"]
        infos = job_infos(slurm) if slurm else {}
        self._infos = {}
        self._backends = {name: backend for name, (_, backend, _) in ledger.items()}
        for name, (job_id, backend, pid_start) in ledger.items():
            if backend == "slurm":
                if infos is not None and job_id in infos:
                    self._infos[name] = infos[job_id]
            elif job_id.isdigit():  # local backend: the job id is its controller's pid
                running = proc.same_process(int(job_id), pid_start)
                self._infos[name] = JobInfo(job_id=job_id, state="RUNNING" if running else "ENDED")

    def info(self, name: str) -> JobInfo | None:
        return self._infos.get(name)

    def backend(self, name: str) -> str:
        """``slurm`` or ``local``: where the named component's job runs (empty when the ledger lacks it)."""
        return self._backends.get(name, "")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


async def wait_for_endpoints(run_dir: Path, names: list[str], *, me: str, timeout_s: float,
                             watch: JobWatch | None = None, poll_s: float = POLL_S,
                             min_found: int | None = None) -> list[Endpoint]:
    """Endpoints ``names`` once all are published. ``timeout_s`` counts only time in which some missing one was
    not queued in Slurm. With ``min_found``, ends early (with the ones published) once the others cannot come,
    or at the deadline. Raises :class:`WaitFailed` naming what did not come and why."""
    watch = watch or JobWatch(run_dir)
    need = len(names) if min_found is None else min_found
    started = time.monotonic()
    budget = timeout_s
    last_tick = started
    last_said = ""
    last_log = 0.0
    try:
        while True:
            published = {n: read_endpoint(run_dir, n) for n in names}
            found = [n for n, ep in published.items() if ep is not None]
            missing = [n for n in names if n not in found]
            if not missing:
                return [ep for ep in published.values() if ep is not None]
            await asyncio.to_thread(watch.refresh, missing)
            infos = {n: watch.info(n) for n in missing}
            dead = {n: i for n, i in infos.items() if i is not None and not i.live and i.state != "UNKNOWN"
                    and read_endpoint(run_dir, n) is None}
            now = time.monotonic()
            queued = all(i is not None and i.state == "PENDING" for i in infos.values())
            if not queued:
                budget -= now - last_tick
            last_tick = now
            coming = [n for n in missing if n not in dead]
            if dead and (len(found) + len(coming) < need or not coming):
                if len(found) >= need:
                    break
                why = "; ".join(f"{n}: {i.describe()}" for n, i in dead.items())
                raise WaitFailed(f"{me}: {why} before publishing its endpoint; gave up waiting for "
                                 f"{', '.join(missing)} (see its log under {RunDir(run_dir).logs()})")
            if budget <= 0:
                if len(found) >= need and found:
                    break
                seen = "; ".join(f"{n}: {i.describe() if i else 'job state unknown'}" for n, i in infos.items())
                raise WaitFailed(f"{me}: waited {_minutes(now - started)} for {', '.join(missing)} in "
                                 f"{RunDir(run_dir).endpoints} ({timeout_s:.0f} s of it not queued); last seen: {seen}")
            states = ", ".join(f"{n}: {i.describe() if i else 'job state unknown'}" for n, i in infos.items())
            said = f"waiting for {states}"
            if said != last_said or now - last_log >= LOG_EVERY_S:
                line = f"{said}, {_minutes(now - started)}"
                log.info("%s %s", me, line)
                write_wait(run_dir, WaitRecord(component=me, waiting_for=missing, detail=line,
                                               since=time.time() - (now - started), updated=time.time()))
                last_said, last_log = said, now
            await asyncio.sleep(poll_s)
    finally:
        clear_wait(run_dir, me)
    published = {n: read_endpoint(run_dir, n) for n in names}
    eps = [ep for ep in published.values() if ep is not None]
    log.warning("%s: going on with %s; %s did not come", me, ", ".join(e.name for e in eps),
                ", ".join(n for n, ep in published.items() if ep is None))
    return eps
