"""The live progress display of ``launch --wait`` / ``resume --wait`` on a terminal (rich).

Sessions done / total, in flight per stage (summed over the live ranks), accepted, tokens/s, elapsed, ETA (failed
sessions count in the total; the final line says how many). In a
batch log (stderr not a terminal) the CLI prints one line per change instead (:func:`monitor.progress_line`).
"""

from __future__ import annotations

import time
from typing import IO

from rich import box
from rich.console import Console
from rich.live import Live
from rich.table import Table

from polar_hpc.wire.control import RunStatus

STAGES = ("queued", "init", "ready", "run", "postrun")


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


class TokenRate:
    """Tokens/s from successive statuses (the coordinator reports the running total)."""

    def __init__(self) -> None:
        self.last: tuple[float, int] | None = None
        self.rate = 0.0

    def update(self, status: RunStatus) -> float:
        if self.last is not None and status.updated > self.last[0]:
            self.rate = (status.tokens - self.last[1]) / (status.updated - self.last[0])
        if self.last is None or status.updated > self.last[0]:
            self.last = (status.updated, status.tokens)
        return self.rate


def progress_table(status: RunStatus | None, tokens_per_s: float, now: float | None = None) -> Table:
    table = Table(title="polar-hpc run: sessions done, in flight per stage", box=box.SIMPLE_HEAD, show_edge=False,
                  header_style="bold", pad_edge=False, collapse_padding=True)
    for col in ("done", *STAGES, "accepted", "tok/s", "elapsed", "ETA"):  # fits 80 columns
        table.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    if status is None:
        table.add_row("-", *["-"] * (len(STAGES) + 4))
        table.caption = "waiting for the coordinator's first status..."
        return table
    s = {k.lower(): v for k, v in status.sessions.items()}
    occupancy = {stage: sum(r.occupancy.get(stage, 0) for r in status.ranks if r.alive) for stage in STAGES}
    now = time.time() if now is None else now
    elapsed = now - status.started if status.started else None
    table.add_row(f"{s.get('committed', 0)}/{sum(s.values())}", *(str(occupancy[st]) for st in STAGES),
                  str(status.accepted), f"{tokens_per_s:.0f}", _clock(elapsed),
                  _clock(status.eta_s))
    return table


class LiveDisplay:
    """A context manager: ``update(status)`` redraws the table, ``say(line)`` prints a message above it."""

    def __init__(self, stream: IO[str]) -> None:
        self.console = Console(file=stream)
        self.rate = TokenRate()
        self.live = Live(progress_table(None, 0.0), console=self.console, refresh_per_second=2, transient=False)

    def __enter__(self) -> LiveDisplay:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def update(self, status: RunStatus | None) -> None:
        rate = self.rate.update(status) if status is not None else 0.0
        self.live.update(progress_table(status, rate))

    def say(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False)
