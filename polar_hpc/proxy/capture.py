"""Completion records per session: in arrival order, in memory up to a bound, spilled to disk beyond it.

Each call reserves its index when it arrives; records are released in index order once every earlier call
has finished, so the session's record (and its JSONL file, when ``records_dir`` is set) is in arrival order
even when calls overlap.
"""

from __future__ import annotations

import os
import struct
import tempfile
from pathlib import Path
from typing import IO

from polar_hpc.log import get_logger
from polar_hpc.util.fs import safe_name
from polar_hpc.wire import codec
from polar_hpc.wire.calls import CompletionRecord

log = get_logger("proxy.capture")
_LEN = struct.Struct("<Q")


def record_bytes(rec: CompletionRecord) -> int:
    return (
        rec.prompt_ids.nbytes + rec.output_ids.nbytes + rec.output_logprobs.nbytes + len(rec.request) + 512
    )


class SessionLog:
    def __init__(
        self,
        session_id: str,
        *,
        memory_limit_bytes: int,
        spill_dir: Path,
        jsonl_path: Path | None = None,
    ) -> None:
        self.session_id = session_id
        self._limit = memory_limit_bytes
        self._spill_dir = spill_dir
        self._jsonl_path = jsonl_path
        self._next_index = 0
        self._next_release = 0
        self._pending: dict[int, CompletionRecord | None] = {}
        self._memory: list[CompletionRecord] = []
        self._memory_bytes = 0
        self._spill_path: Path | None = None
        self._spill: IO[bytes] | None = None
        self._spilled = 0
        self._jsonl: IO[bytes] | None = None
        self.closed = False

    def reserve(self) -> int:
        i = self._next_index
        self._next_index += 1
        return i

    def finish(self, index: int, rec: CompletionRecord | None) -> None:
        """Hand in the record of call ``index`` (None: the call left no record)."""
        if self.closed:
            log.warning("session %s closed before call %d finished; its record is dropped", self.session_id, index)
            return
        self._pending[index] = rec
        while self._next_release in self._pending:
            r = self._pending.pop(self._next_release)
            self._next_release += 1
            if r is not None:
                self._release(r)

    def _release(self, rec: CompletionRecord) -> None:
        if self._jsonl_path is not None:
            if self._jsonl is None:
                self._jsonl = open(self._jsonl_path, "ab")  # noqa: SIM115
            self._jsonl.write(codec.to_json(rec) + b"\n")
            self._jsonl.flush()
        self._memory.append(rec)
        self._memory_bytes += record_bytes(rec)
        while self._memory_bytes > self._limit and len(self._memory) > 1:
            self._spill_one()

    def _spill_one(self) -> None:
        rec = self._memory.pop(0)
        self._memory_bytes -= record_bytes(rec)
        if self._spill is None:
            self._spill_dir.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f"{safe_name(self.session_id)}-", suffix=".spill", dir=self._spill_dir)
            self._spill_path = Path(name)
            self._spill = os.fdopen(fd, "w+b")
        data = codec.to_json(rec)  # not msgpack: ``request`` is raw JSON, which msgpack would embed verbatim
        self._spill.write(_LEN.pack(len(data)) + data)
        self._spilled += 1

    @property
    def count(self) -> int:
        return self._spilled + len(self._memory)

    def close(self) -> list[CompletionRecord]:
        """All released records in arrival order; calls still in flight are left out (and logged)."""
        self.closed = True
        in_flight = self._next_index - self._next_release
        if in_flight:
            log.warning("session %s closed with %d call(s) in flight or unreleased", self.session_id, in_flight)
        out: list[CompletionRecord] = []
        if self._spill is not None:
            self._spill.flush()
            self._spill.seek(0)
            dec = codec.json_decoder(CompletionRecord)
            for _ in range(self._spilled):
                (n,) = _LEN.unpack(self._spill.read(_LEN.size))
                out.append(dec.decode(self._spill.read(n)))
            self._spill.close()
            if self._spill_path is not None:
                self._spill_path.unlink(missing_ok=True)
        out.extend(self._memory)
        self._memory = []
        if self._jsonl is not None:
            self._jsonl.close()
        return out
