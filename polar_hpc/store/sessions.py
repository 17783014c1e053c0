"""The session table of one shard, read from ``schema.SESSION_COLUMNS`` (no token data)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from polar_hpc.store import schema as S
from polar_hpc.store.schema import SESSION_FIELD_COLUMNS
from polar_hpc.store.shardfile import Shard, read_items
from polar_hpc.wire.results import SessionResult

_RESULT_FIELDS = {f.name: f for f in msgspec.structs.fields(SessionResult)}
_ROW = tuple((c.name, c.decode) for c in SESSION_FIELD_COLUMNS)


class SessionTable(msgspec.Struct, kw_only=True):
    """The per-session columns of one shard: each of ``SESSION_FIELD_COLUMNS`` by its ``name`` (arrays as
    stored, text as str), and ``trace_offsets``. The columns are attributes too (``keys``, ``task_ids`` ...)."""

    columns: dict[str, Any]
    trace_offsets: np.ndarray
    values: dict[str, list[Any]] = msgspec.field(default_factory=dict)
    """The columns as Python values, made once (``tolist``) by the first ``row``: a row is then list lookups."""

    def __len__(self) -> int:
        return len(self.trace_offsets) - 1

    def row(self, i: int) -> dict[str, Any]:
        """Session ``i``'s column values by name, as Python values (decoded: ``status`` a ``TraceStatus``)."""
        values = self.values
        if not values:
            values.update((name, col.tolist() if isinstance(col, np.ndarray) else col)
                          for name, col in self.columns.items())
        return {name: values[name][i] if decode is None else decode(values[name][i]) for name, decode in _ROW}

    @property
    def keys(self) -> list[str]:
        keys: list[str] = self.columns["key"]
        return keys

    @property
    def task_ids(self) -> list[str]:
        ids: list[str] = self.columns["task_id"]
        return ids

    @property
    def harness(self) -> list[str]:
        names: list[str] = self.columns["harness"]
        return names

    @property
    def model(self) -> list[str]:
        names: list[str] = self.columns["model"]
        return names

    @property
    def sample_index(self) -> np.ndarray:
        return self._array("sample_index")

    @property
    def attempt(self) -> np.ndarray:
        return self._array("attempt")

    @property
    def status(self) -> np.ndarray:
        return self._array("status")

    @property
    def reward(self) -> np.ndarray:
        return self._array("session_reward")

    @property
    def duration_s(self) -> np.ndarray:
        return self._array("duration_s")

    @property
    def policy_version(self) -> np.ndarray:
        return self._array("policy_version")

    @property
    def gateway_rank(self) -> np.ndarray:
        return self._array("gateway_rank")

    def _array(self, name: str) -> np.ndarray:
        a: np.ndarray = self.columns[name]
        return a


def read_sessions(f: Shard) -> SessionTable:
    """A column the shard is older than reads as its ``SessionResult`` field's default in every row."""
    offsets = f.read(S.TRACE_OFFSETS)
    n = offsets.shape[0] - 1
    columns: dict[str, Any] = {}
    for c in SESSION_FIELD_COLUMNS:
        if f.version >= c.since:
            columns[c.name] = read_items(f, c) if c.kind == "text" else f.read(c.path)
            continue
        info = _RESULT_FIELDS[str(c.field)]
        default = info.default_factory() if info.default_factory is not msgspec.NODEFAULT else info.default
        columns[c.name] = [default] * n if c.kind == "text" else np.full(n, default, dtype=c.dtype)
    return SessionTable(columns=columns, trace_offsets=offsets)
