"""Slurm job states as the launcher, ``status`` and the components' waits read them (squeue, then sacct).

Rows of a pending job array come as one line, ``123_[0-7%8]``: it is expanded to ``123_0`` ... ``123_7`` so every
task of the array gets its state. Queries go by the array's base id (``sacct -j 123_0`` finds nothing while the
array is pending).
"""

from __future__ import annotations

import re
import subprocess

import msgspec

from polar_hpc.log import get_logger

log = get_logger("slurm")

LIVE_STATES = frozenset({"PENDING", "RUNNING", "REQUEUED", "CONFIGURING", "COMPLETING", "RESIZING", "SUSPENDED",
                         "REQUEUE_HOLD", "REQUEUE_FED", "SIGNALING", "STAGE_OUT", "STOPPED"})
"""States of a job that has not ended (it may still start, run or come back)."""
FAILED_STATES = frozenset({"FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE",
                           "PREEMPTED", "REVOKED"})
"""Ended states that are not a success."""
UNKNOWN = "UNKNOWN"

_FIELDS = "JobID,State,Reason,NodeList,Elapsed,Timelimit"
_SQUEUE_FORMAT = "%i|%T|%r|%N|%M|%l"
_ARRAY = re.compile(r"^(?P<base>\d+)_\[(?P<spec>[^\]]+)\]$")


class JobInfo(msgspec.Struct, frozen=True, kw_only=True):
    job_id: str
    state: str
    """First word of Slurm's state (``CANCELLED by 0`` -> ``CANCELLED``)."""
    reason: str = ""
    """Why a pending job waits (``Resources``, ``Priority``, ``JobHeldUser``, ...); empty when none."""
    node: str = ""
    elapsed: str = ""
    time_limit: str = ""

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def failed(self) -> bool:
        return self.state in FAILED_STATES

    def describe(self) -> str:
        """``job 123 PENDING (Resources)``, ``job 123 RUNNING on n1``."""
        text = f"job {self.job_id} {self.state}"
        if self.reason and self.state == "PENDING":
            text += f" ({self.reason})"
        if self.node and self.state != "PENDING":
            text += f" on {self.node}"
        return text


def expand_job_id(raw: str) -> list[str]:
    """``123_[0-3%4]`` -> ``123_0`` ... ``123_3``; ``123_[1,4-5]`` -> 1, 4, 5; other ids unchanged."""
    m = _ARRAY.match(raw)
    if m is None:
        return [raw]
    out = []
    for part in m["spec"].split("%")[0].split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return [raw]
        out += [f"{m['base']}_{i}" for i in range(int(lo), int(hi or lo) + 1)]
    return out


def parse_rows(text: str) -> dict[str, JobInfo]:
    """``JobID|State|Reason|NodeList|Elapsed|Timelimit`` lines (sacct -P or squeue with that format)."""
    out: dict[str, JobInfo] = {}
    for line in text.splitlines():
        cols = line.strip().split("|")
        if len(cols) < 2 or not cols[0]:
            continue
        cols += [""] * (6 - len(cols))
        state = cols[1].split()[0] if cols[1].strip() else UNKNOWN
        reason = "" if cols[2] in ("None", "(null)") else cols[2]
        node = "" if cols[3] in ("None assigned", "(null)") else cols[3]
        for jid in expand_job_id(cols[0]):
            out[jid] = JobInfo(job_id=jid, state=state, reason=reason, node=node, elapsed=cols[4],
                               time_limit=cols[5])
    return out


def _base_ids(job_ids: list[str]) -> str:
    return ",".join(sorted({j.split("_")[0] for j in job_ids}))


def _ask(argv: list[str], timeout_s: float) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError) as err:
        log.warning("%s failed (%s)", argv[0], err)
        return None
    if out.returncode != 0 and not out.stdout.strip():
        return None
    return out.stdout


def job_infos(job_ids: list[str], timeout_s: float = 10.0) -> dict[str, JobInfo] | None:
    """What Slurm says of each job (ids as submitit gives them: ``123`` or ``123_4``). squeue first (the
    controller's live view: a hold or a new pending reason shows at once), sacct for jobs the controller no longer
    holds. A job neither lists gets state ``UNKNOWN``; ``None`` when neither answers."""
    if not job_ids:
        return {}
    live = _ask(["squeue", "-h", "-t", "all", "-o", _SQUEUE_FORMAT, "-j", _base_ids(job_ids)], timeout_s)
    rows = parse_rows(live or "")
    rest = [j for j in job_ids if j not in rows]
    old = None
    if rest:
        old = _ask(["sacct", "-n", "-P", "-X", "-o", _FIELDS, "-j", _base_ids(rest)], timeout_s)
        rows = {**parse_rows(old or ""), **rows}
    if live is None and old is None:
        log.warning("neither squeue nor sacct answered; job states unknown")
        return None
    return {j: rows.get(j, JobInfo(job_id=j, state=UNKNOWN)) for j in job_ids}
