"""What the shards cannot tell a restarted coordinator: tasks submitted by clients, cancellations and sessions
given up as ERROR. Append-only JSONL (``coordinator/journal.jsonl`` of the run dir), fsynced per write."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

import msgspec

from polar_hpc.log import get_logger
from polar_hpc.wire.codec import json_decoder, json_encoder
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.session import Task

log = get_logger("coordinator.journal")


class Submitted(msgspec.Struct, tag=True):
    task: Task


class Cancelled(msgspec.Struct, tag=True):
    task_id: str


class GaveUp(msgspec.Struct, tag=True):
    key: str
    error: str


Entry = Submitted | Cancelled | GaveUp


class Journal:
    def __init__(self, run_dir: Path) -> None:
        self.path = RunDir(run_dir).journal_path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._enc = json_encoder()
        self._fh: BinaryIO | None = None

    def read(self) -> list[Entry]:
        if not self.path.exists():
            return []
        dec: msgspec.json.Decoder[Entry] = json_decoder(Entry)  # type: ignore[arg-type]  # a Union: a msgspec type, not a type[T]
        out: list[Entry] = []
        with self.path.open("rb") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    out.append(dec.decode(line))
                except msgspec.DecodeError as err:
                    log.warning("%s:%d: skipping unreadable journal entry (%s)", self.path, lineno, err)
        return out

    def append(self, entries: list[Entry]) -> None:
        if not entries:
            return
        if self._fh is None:
            self._fh = self.path.open("ab")
        fh = self._fh
        fh.write(b"".join(self._enc.encode(e) + b"\n" for e in entries))
        fh.flush()
        os.fsync(fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
