"""The run directory: every file and folder a component reads or writes there, and the readers of its files.

    <run>/                              mode 0700: only the run's owner can read anything below it
    <run>/config.toml                   resolved RunConfig (what every component reads)
    <run>/secrets/                      mode 0700 / files 0600: run_token, control.json (wire/security.py)
    <run>/endpoints/<name>.json         published atomically by components when ready (wire/endpoints.py)
    <run>/waits/<component>.json        what a component is waiting for (wire/waits.py)
    <run>/logs/<component>/             submitit folders (<job id>/), <component>-<index>.pid
    <run>/logs/launcher.log             the local backend's job controllers' stdio
    <run>/shards/                       committed HDF5 shards
    <run>/status.json                   progress written by the coordinator
    <run>/jobs.json                     what the launcher submitted (job ids or pids)
    <run>/policy.json                   the newest weights a trainer loaded on the engines (a restarted
                                        inference server loads them before it serves)
    <run>/cancelled.json                written by `polar-hpc cancel`, or with a reason by a job that stops the
                                        run (an inference server that kept dying); removed by `resume`
    <run>/code/                         frozen copy of the polar_hpc package used by queued jobs
    <run>/coordinator/journal.jsonl     the coordinator's journal (coordinator/journal.py)
    <run>/records/<session>.jsonl       completion records (``gateway.keep_records``)
    <run>/analysis/logprobs.json        trainer-vs-rollout logprob agreement (`polar-hpc shards logprobs`)
    <run>/sessions/rank-NNNNN/<session>/  one folder per session of a gateway rank (SessionDir: home/, work/, logs/)
    <run>/sessions/proxy-NNNNN.sock     a gateway rank's proxy socket
    <run>/released/rank-NNNNN/<session>.json  partial result of an attempt the system cut (drain, engine gone):
                                        kept aside with its provenance, never in a shard, never trained on

Component names (``coordinator``, ``inference-<N>``, ``gateway-<N>``) name endpoint, wait and pid files.
Making a run (modes, secrets, the frozen code) is the launcher's (launch/rundir.py).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Literal, Protocol

import msgspec

from polar_hpc.config import RunConfig, load_recipe
from polar_hpc.config.run import Backend
from polar_hpc.util.fs import write_atomic
from polar_hpc.wire.codec import from_json, to_json
from polar_hpc.wire.control import RunStatus

CONFIG = "config.toml"
SECRETS = "secrets"
RUN_TOKEN = "run_token"
"""In ``secrets/``: the bearer token of the HTTP facade and the inference servers' API key."""
CONTROL_KEYS = "control.json"
"""In ``secrets/``: the control plane's CURVE keys (wire/security.py)."""
ENDPOINTS = "endpoints"
WAITS = "waits"
LOGS = "logs"
LAUNCHER_LOG = "launcher.log"
SHARDS = "shards"
STATUS = "status.json"
JOBS = "jobs.json"
CANCELLED = "cancelled.json"
POLICY = "policy.json"
CODE = "code"
JOURNAL = "coordinator/journal.jsonl"
RECORDS = "records"
ANALYSIS = "analysis"
LOGPROBS = "logprobs.json"
"""In ``analysis/``: ``train.agreement.AgreementReport``, read by ``polar-hpc report``."""
SESSIONS = "sessions"
RELEASED = "released"

SESSION_HOME = "home"
SESSION_WORK = "work"
SESSION_LOGS = "logs"

Component = Literal["inference", "coordinator", "gateway"]


def component_name(component: str, index: int = 0) -> str:
    """``coordinator`` (there is one), else ``<component>-<index>``: the name of its endpoint, wait and pid files."""
    return "coordinator" if component == "coordinator" else f"{component_prefix(component)}{index}"


def component_prefix(component: str) -> str:
    """What the names of a component's instances start with (``inference-``): to list its endpoints."""
    return f"{component}-"


def shards_of(path: str | os.PathLike[str]) -> Path:
    """``path/shards`` where ``path`` is a run dir holding one, else ``path`` (a shards dir given directly)."""
    p = Path(path)
    return p / SHARDS if (p / SHARDS).is_dir() else p


def session_rank(session_dir: str | os.PathLike[str]) -> tuple[Path, int] | None:
    """(run dir, rank) of a folder under ``<run>/sessions/rank-NNNNN/`` (:meth:`RunDir.sessions`), else None."""
    for parent in Path(session_dir).parents:
        m = re.fullmatch(r"rank-(\d+)", parent.name)
        if m and parent.parent.name == SESSIONS:
            return parent.parent.parent, int(m.group(1))
    return None


class JobRecord(msgspec.Struct, kw_only=True):
    component: Component
    index: int
    """Server index for inference, rank for gateways, 0 for the coordinator."""
    job_id: str
    backend: Backend
    folder: str
    submitted_at: float
    pid_start: int | None = None
    """Local backend: start time (/proc/<pid>/stat field 22) of the controller whose pid is ``job_id``."""
    resubmits: int = 0
    """How often the run's monitor submitted this component again after its job was lost (launch/lost.py);
    0 again after ``launch`` / ``resume``."""
    lost_job: str = ""
    """The job this one replaces, when the monitor resubmitted it."""
    lost_state: str = ""
    """How that job ended (``CANCELLED``, ``NODE_FAIL``, ...)."""

    @property
    def name(self) -> str:
        return component_name(self.component, self.index)


class JobsFile(msgspec.Struct, kw_only=True):
    """``jobs.json``: the launcher's ledger."""

    backend: Backend
    jobs: list[JobRecord] = msgspec.field(default_factory=list)


class CancelRecord(msgspec.Struct, kw_only=True):
    """``cancelled.json``: written by ``polar-hpc cancel`` before it signals anything; ``resume`` removes it."""

    at: float
    """Wall-clock time of the cancel."""
    grace_s: float
    reason: str = ""
    """Why the run was stopped, when a fault stopped it (an inference server that kept dying); empty: a cancel."""


class PolicyRecord(msgspec.Struct, kw_only=True):
    """``policy.json``: the checkpoint a trainer last loaded on every engine, and its weight version."""

    path: str
    version: str
    """The engines' name of it (``wire.versions.engine_name``)."""


class _Rooted(Protocol):
    root: Path


class Below:
    """A path under the owner's ``root``, read like a property (and typed: a ``property(lambda ...)`` is Any)."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts

    def __get__(self, obj: _Rooted, owner: type | None = None) -> Path:
        return obj.root.joinpath(*self.parts)


class RunDir:
    """Paths of one run dir (``root`` resolved) and its files' readers and writers."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    config_path = Below(CONFIG)
    secrets = Below(SECRETS)
    run_token_path = Below(SECRETS, RUN_TOKEN)
    endpoints = Below(ENDPOINTS)
    waits = Below(WAITS)
    shards = Below(SHARDS)
    status_path = Below(STATUS)
    jobs_path = Below(JOBS)
    code = Below(CODE)
    cancelled_path = Below(CANCELLED)
    policy_path = Below(POLICY)
    journal_path = Below(JOURNAL)
    records = Below(RECORDS)
    logprobs_path = Below(ANALYSIS, LOGPROBS)
    launcher_log = Below(LOGS, LAUNCHER_LOG)

    def logs(self, component: str = "") -> Path:
        """``logs/<component>/`` (``logs/`` without one)."""
        return self.root / LOGS / component if component else self.root / LOGS

    def job_logs(self, component: str, job_id: str = "%j") -> Path:
        """A submitit job's folder (``%j``: the pattern submitit fills in with the job id)."""
        return self.logs(component) / job_id

    def pid_file(self, component: str, index: int) -> Path:
        return self.logs(component) / f"{component}-{index}.pid"

    def sessions(self, rank: int) -> Path:
        """The session folders of one gateway rank."""
        return self.root / SESSIONS / f"rank-{rank:05d}"

    def released(self, rank: int) -> Path:
        """Partial results of one gateway rank's released attempts (``<session>.json``, a ``SessionResult``)."""
        return self.root / RELEASED / f"rank-{rank:05d}"

    def proxy_socket(self, rank: int) -> Path:
        return self.root / SESSIONS / f"proxy-{rank:05d}.sock"

    def exists(self) -> bool:
        return self.config_path.is_file()

    def load_config(self) -> RunConfig:
        if not self.exists():
            raise FileNotFoundError(f"{self.root}: not a polar-hpc run directory (no {CONFIG})")
        return load_recipe(self.config_path)

    def read_status(self) -> RunStatus | None:
        """The coordinator's last ``status.json``; None before the first one (or if it cannot be read)."""
        try:
            return from_json(self.status_path.read_bytes(), RunStatus)
        except (OSError, msgspec.DecodeError):
            return None

    def write_status(self, status: RunStatus) -> None:
        write_atomic(self.status_path, to_json(status))

    def read_jobs(self) -> JobsFile | None:
        if not self.jobs_path.is_file():
            return None
        return msgspec.json.decode(self.jobs_path.read_bytes(), type=JobsFile)

    def write_jobs(self, jobs: JobsFile) -> None:
        write_atomic(self.jobs_path, msgspec.json.format(msgspec.json.encode(jobs)))

    def mark_cancelled(self, grace_s: float, reason: str = "") -> None:
        record = CancelRecord(at=time.time(), grace_s=grace_s, reason=reason)
        write_atomic(self.cancelled_path, msgspec.json.encode(record))

    def cancelled(self) -> CancelRecord | None:
        try:
            return msgspec.json.decode(self.cancelled_path.read_bytes(), type=CancelRecord)
        except (OSError, msgspec.DecodeError):
            return None

    def write_policy(self, record: PolicyRecord) -> None:
        write_atomic(self.policy_path, msgspec.json.encode(record))

    def policy(self) -> PolicyRecord | None:
        """The newest weights a trainer loaded (None: none yet, or the file is unreadable)."""
        try:
            return msgspec.json.decode(self.policy_path.read_bytes(), type=PolicyRecord)
        except (OSError, msgspec.DecodeError):
            return None

    def run_token(self) -> str | None:
        """``secrets/run_token``; None where there is none (a run dir made by hand)."""
        try:
            return self.run_token_path.read_text().strip() or None
        except FileNotFoundError:
            return None


class SessionDir:
    """One session's folder, as a sandbox sees it too: ``home/`` (the harness's HOME), ``work/``, ``logs/``
    (harness, prepare, evaluation and agent logs). ``root`` is kept as given (sandboxes bind it)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    home = Below(SESSION_HOME)
    work = Below(SESSION_WORK)
    logs = Below(SESSION_LOGS)
    harness_log = Below(SESSION_LOGS, "harness.log")
    prepare_log = Below(SESSION_LOGS, "prepare.log")

    def agent_log(self, harness: str) -> Path:
        return self.root / SESSION_LOGS / "agent" / f"{harness}.txt"
