"""The live progress display of ``launch --wait`` / ``resume --wait`` on a terminal (rich).

Sessions done / total, in flight per stage (summed over the live ranks), accepted, tokens/s, elapsed, ETA (failed
sessions count in the total; the final line says how many); under the table the components' job states (Slurm's,
with the reason a job pends) and what a component waits for. In a batch log (stderr not a terminal) the CLI prints
one line per change instead (:func:`monitor.progress_line`).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import IO

from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from polar_hpc.launch.monitor import ComponentState, component_states, session_counts
from polar_hpc.wire.control import RunStatus
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.waits import WaitRecord, read_waits

STAGES = ("queued", "init", "ready", "run", "postrun")
JOBS_EVERY_S = 10.0
"""How often the display asks Slurm (squeue/sacct) for the components' states."""


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class TokenRate:
    """Tokens/s since the first status seen (the coordinator reports the running total of done sessions, so the
    rate between two statuses jumps, and is 0 in the last one)."""

    def __init__(self) -> None:
        self.first: tuple[float, int] | None = None
        self.rate = 0.0

    def update(self, status: RunStatus) -> float:
        if self.first is None:
            self.first = (status.updated, status.tokens)
        elif status.updated > self.first[0]:
            self.rate = (status.tokens - self.first[1]) / (status.updated - self.first[0])
        return self.rate


def wait_line(wait: WaitRecord, now: float | None = None) -> str:
    """``gateway-0 waiting for inference-0: job 123 PENDING (Resources), 4 min``, the time counted to ``now``
    (the record's own detail keeps the time it was written at)."""
    said = wait.detail.rsplit(", ", 1)[0]
    waited = (time.time() if now is None else now) - wait.since
    if waited >= 60:
        return f"{wait.component} {said}, {waited / 60:.0f} min"
    return f"{wait.component} {said}, {waited:.0f} s"


def jobs_summary(comps: list[ComponentState]) -> str:
    """``inference 1 PENDING (Resources) · coordinator 1 RUNNING · gateway 7 RUNNING, 1 PENDING (Priority)``."""
    groups: dict[str, Counter[str]] = {c: Counter() for c in ("inference", "coordinator", "gateway")}
    for c in comps:
        label = f"{c.state} ({c.reason})" if c.state == "PENDING" and c.reason not in ("", "None") else c.state
        groups.setdefault(c.component, Counter())[label] += 1
    return " · ".join(f"{comp} " + ", ".join(f"{n} {label}" for label, n in counts.items())
                      for comp, counts in groups.items() if counts)


def progress_table(status: RunStatus | None, tokens_per_s: float, now: float | None = None) -> Table:
    table = Table(title="polar-hpc run: sessions done, in flight per stage", box=box.SIMPLE_HEAD, show_edge=False,
                  header_style="bold", pad_edge=False, collapse_padding=True)
    for col in ("done", *STAGES, "accepted", "tok/s", "elapsed", "ETA"):  # fits 80 columns
        table.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    if status is None:
        table.add_row("-", *["-"] * (len(STAGES) + 4))
        table.caption = "waiting for the coordinator's first status..."
        return table
    done, committed, total = session_counts(status)
    occupancy = {stage: sum(r.occupancy.get(stage, 0) for r in status.ranks if r.alive) for stage in STAGES}
    now = time.time() if now is None else now
    elapsed = now - status.started if status.started else None
    table.add_row(f"{done}/{total}", *(str(occupancy[st]) for st in STAGES),
                  str(status.accepted), f"{tokens_per_s:.0f}", _clock(elapsed),
                  _clock(status.eta_s))
    table.caption = (f"{committed} committed · failed {status.failed} · mean reward {status.reward_mean:.3f}"
                     f"{' · finished' if status.finished else ''}")
    return table


def progress_view(table: Table, notes: list[str]) -> Group:
    """The table, then one line per note (job states, waits) at the terminal's width, not the table's."""
    return Group(table, *(Text(line, no_wrap=False) for line in notes))


class LiveDisplay:
    """A context manager: ``update(status)`` redraws the table, ``say(line)`` prints a message above it."""

    def __init__(self, stream: IO[str], run: RunDir | None = None, jobs_every_s: float = JOBS_EVERY_S) -> None:
        self.console = Console(file=stream)
        self.rate = TokenRate()
        self.run = run
        self.jobs_every_s = jobs_every_s
        self._jobs_at = -jobs_every_s
        self._jobs_line = ""
        self.live = Live(progress_table(None, 0.0), console=self.console, refresh_per_second=2, transient=False)

    def __enter__(self) -> LiveDisplay:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def update(self, status: RunStatus | None) -> None:
        rate = self.rate.update(status) if status is not None else 0.0
        self.live.update(progress_view(progress_table(status, rate), self.notes()))

    def notes(self) -> list[str]:
        """The components' job states (refreshed every ``jobs_every_s``) and what each waits for."""
        if self.run is None:
            return []
        if time.monotonic() - self._jobs_at >= self.jobs_every_s:
            self._jobs_at = time.monotonic()
            jobs = self.run.read_jobs()
            self._jobs_line = f"jobs: {jobs_summary(component_states(self.run, jobs))}" if jobs else ""
        waits = [wait_line(w) for w in read_waits(self.run.root).values()]
        return [line for line in (self._jobs_line, *waits) if line]

    def say(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False)
